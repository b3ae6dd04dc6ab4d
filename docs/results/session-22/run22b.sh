#!/bin/bash
# session 22 round 2 (device tool, carry ["target/device", "target/exp22"]): the device pack of
# HEAD (full twiddle table, chain-start marker): its GPU tests, the MSM table's rows for G1 and G2
# (bench-msm-*.json beside this script), the 2^28 NTT with the full table (--config 2,9,9,1,28)
# against the default (2,9,9,1,27: no table at 2^28), and ncu on msm_affine_sums_g1 (G1 2^22, the
# first two launches) with the base bench_msm of round 1 (no marker) and this pack's.
cd "$(dirname "$0")/../../.."
S=$(date +%s)
MSM_ARGS=skip bash target/device/run.sh --min 20 --max 20 --no-sweep > $OUT/run-sh.txt 2>&1
echo "run.sh rc=$? t=$(( $(date +%s)-S ))"; grep -E '^test result|FAILED|panicked|exit status' $OUT/run-sh.txt
cp $OUT/tests.log $OUT/tests.txt 2>/dev/null
gunzip -c target/device/bench_msm.gz > /tmp/b; gunzip -c target/device/bench_ntt.gz > /tmp/n
gunzip -c target/exp22/bench_msm_base.gz > /tmp/b_base; chmod +x /tmp/b /tmp/n /tmp/b_base
run() { name=$1; shift; echo "== bench_msm $*" > $OUT/$name.log; timeout 200 /tmp/b "$@" --out $OUT/$name.json >> $OUT/$name.log 2>&1; echo "$name rc=$? t=$(( $(date +%s)-S ))"; grep -E '^\| G|panick|mismatch|rror' $OUT/$name.log | cut -c1-200; }
run bench-msm-g1-20-24 --min 20 --max 24 --g2-max 0 --reps 3 --check-max 22 --window-sweep
run bench-msm-g2-20-24 --min 20 --max 24 --g1-max 0 --g2-max 24 --reps 3 --check-max 22 --window-sweep
run bench-msm-g1-25-26 --min 25 --max 26 --g2-max 0 --reps 3 --check-max 0
run bench-msm-g2-25-26 --min 25 --max 26 --g1-max 0 --g2-max 26 --reps 3 --check-max 0
for c in 2,9,9,1,28 2,9,9,1,27; do
  echo "== bench_ntt --config $c t=$(( $(date +%s)-S ))"
  timeout 120 /tmp/n --min 28 --max 28 --no-sweep --no-check --config $c 2>&1 | grep -E '^\| 28 \|'
done
M=sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
for b in b_base b; do
  echo "== ncu msm_affine_sums_g1 /tmp/$b t=$(( $(date +%s)-S ))"
  timeout 200 ncu --clock-control none -k regex:'^msm_affine_sums_g1$' -c 2 --metrics gpu__time_duration.sum,$M /tmp/$b --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 --no-streamed --no-affine > $OUT/ncu-sums-g1-$b.txt 2>&1
  grep -E 'msm_affine_sums_g1|duration|pct_of_peak|inst_executed|ratio' $OUT/ncu-sums-g1-$b.txt | cut -c1-120
done
echo "done t=$(( $(date +%s)-S ))"
