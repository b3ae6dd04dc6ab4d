#!/bin/bash
# session 23 round 4 (device tool, carry ["target/exp23"]): `hoist` (682235b, SASS for sm_90
# only) against `phased` (the same with the round kernels' slot lookups in phases: every slot's
# key, then every key's offsets, no branch between the loads of a phase, and the levels' bases
# and counts in closed form; SASS for sm_90 only): phased checked against blst first, then
# alternately; then ncu on msm_affine_pairs_g1 of both (G1 2^22, the first two launches).
# Everything this prints is also in $OUT/run23d.txt.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run23d.txt) 2>&1
S=$(date +%s)
for b in hoist phased; do gunzip -c target/exp23/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='^\| G|panick|mismatch|rror'
A="--no-streamed --no-affine"
echo "== phased checked against blst: G1 2^20-2^22, G2 2^20-2^21 t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_phased --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
for round in 1 2; do for b in hoist phased; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in hoist phased; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
for b in hoist phased; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
M=smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for b in hoist phased; do
  echo "== ncu msm_affine_pairs_g1 $b t=$(( $(date +%s)-S ))"
  timeout 120 ncu --clock-control none -k regex:'^msm_affine_pairs_g1$' -c 2 --metrics gpu__time_duration.sum,$M /tmp/msm_$b --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 $A > $OUT/ncu-pairs-g1-$b.txt 2>&1
  grep -E 'msm_affine_pairs_g1|duration|pct_of|inst_executed|ratio|launch__|bytes' $OUT/ncu-pairs-g1-$b.txt | cut -c1-120
done
echo "done t=$(( $(date +%s)-S ))"
