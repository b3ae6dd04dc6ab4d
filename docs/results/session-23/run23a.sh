#!/bin/bash
# session 23 round 1 (device tool, carry ["target/device", "target/exp23"]): the device pack of
# HEAD (537bf4d): its GPU tests; the 2^28 NTT with the full table (--config 2,9,9,1,28) against
# the default (2,9,9,1,27: none at 2^28); then the MSM of the pack (base) against `refs`
# (msm_affine_sums finds every slot's value references before its arithmetic and keeps them in
# shared memory; SASS for sm_90 only), refs checked against blst first, then alternately; then
# ncu on msm_affine_sums_g1 (G1 2^22, the first two launches) of both.
cd "$(dirname "$0")/../../.."
S=$(date +%s)
MSM_ARGS=skip bash target/device/run.sh --min 20 --max 20 --no-sweep > $OUT/run-sh.txt 2>&1
echo "run.sh rc=$? t=$(( $(date +%s)-S ))"; grep -E '^test result|FAILED|panicked|exit status' $OUT/run-sh.txt
cp $OUT/tests.log $OUT/tests.txt 2>/dev/null
gunzip -c target/device/bench_msm.gz > /tmp/msm_base; gunzip -c target/device/bench_ntt.gz > /tmp/ntt
gunzip -c target/exp23/bench_msm_refs.gz > /tmp/msm_refs; chmod +x /tmp/msm_base /tmp/msm_refs /tmp/ntt
for c in 2,9,9,1,28 2,9,9,1,27; do
  echo "== bench_ntt --config $c t=$(( $(date +%s)-S ))"
  timeout 120 /tmp/ntt --min 28 --max 28 --no-sweep --no-check --config $c 2>&1 | grep -E '^\| 28 \|'
done
G='^\| G|panick|mismatch|rror'
A="--no-streamed --no-affine"
echo "== refs checked against blst: G1 2^20-2^22, G2 2^20-2^21 t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_refs --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
for round in 1 2; do for b in base refs; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in base refs; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
for b in base refs; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
M=sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,smsp__average_warp_latency_issue_stalled_selected.ratio,smsp__average_warp_latency_issue_stalled_dispatch_stall.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_no_instruction.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
for b in base refs; do
  echo "== ncu msm_affine_sums_g1 $b t=$(( $(date +%s)-S ))"
  timeout 150 ncu --clock-control none -k regex:'^msm_affine_sums_g1$' -c 2 --metrics gpu__time_duration.sum,$M /tmp/msm_$b --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 $A > $OUT/ncu-sums-g1-$b.txt 2>&1
  grep -E 'msm_affine_sums_g1|duration|pct_of|inst_executed|ratio|launch__' $OUT/ncu-sums-g1-$b.txt | cut -c1-120
done
echo "done t=$(( $(date +%s)-S ))"
