#!/bin/bash
# session 23 round 3 (device tool, carry ["target/device", "target/exp23"]): the MSM of the pack
# (base, 537bf4d) against `hoist` (msm_affine_sums in G1 loads both points' y and the slot's
# prefix product with the x coordinates, before the comparisons, and is held to 128 registers
# by __launch_bounds__(128, 4); SASS for sm_90 only): hoist checked against blst first, then
# alternately; then ncu on hoist's msm_affine_sums_g1 (G1 2^22, the first two launches; the
# base's is round 1's ncu-sums-g1-base.txt). Everything this prints is also in $OUT/run23c.txt.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run23c.txt) 2>&1
S=$(date +%s)
gunzip -c target/device/bench_msm.gz > /tmp/msm_base
gunzip -c target/exp23/bench_msm_hoist.gz > /tmp/msm_hoist; chmod +x /tmp/msm_base /tmp/msm_hoist
G='^\| G|panick|mismatch|rror'
A="--no-streamed --no-affine"
echo "== hoist checked against blst: G1 2^20-2^22, G2 2^20 t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_hoist --min 20 --max 22 --g2-max 20 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
for round in 1 2; do for b in base hoist; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in base hoist; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
M=sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,smsp__average_warp_latency_issue_stalled_selected.ratio,smsp__average_warp_latency_issue_stalled_dispatch_stall.ratio,smsp__average_warp_latency_issue_stalled_no_instruction.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
echo "== ncu msm_affine_sums_g1 hoist t=$(( $(date +%s)-S ))"
timeout 150 ncu --clock-control none -k regex:'^msm_affine_sums_g1$' -c 2 --metrics gpu__time_duration.sum,$M /tmp/msm_hoist --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 $A > $OUT/ncu-sums-g1-hoist.txt 2>&1
grep -E 'msm_affine_sums_g1|duration|pct_of|inst_executed|ratio|launch__' $OUT/ncu-sums-g1-hoist.txt | cut -c1-120
echo "done t=$(( $(date +%s)-S ))"
