#!/bin/bash
# session 28 round 2 (device tool, carry ["target/device"]): the device pack of this session's
# plan change (GpuMsm::plan: chunks of 2^26 where the plan stays within a quarter of the device,
# MsmPlan::for_device): its GPU tests (target/device/run.sh, a short NTT run, no MSM bench:
# tests.txt), then the MSM table's rows, G1 and G2 2^20 to 2^26, with the pack's bench_msm
# (bench-msm-*.json and .log beside this script), then G1 and G2 2^26 resident in two chunks of
# 2^25 (the plan before) with the same binary.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run28b.txt) 2>&1
S=$(date +%s)
echo "== GPU tests t=0"
OUT=$OUT/pack MSM_ARGS=skip timeout 300 bash target/device/run.sh --min 20 --max 20 --no-sweep > /dev/null 2>&1; echo "run.sh rc=$?"
cp $OUT/pack/tests.log $OUT/tests.txt; cp $OUT/pack/gpu.txt $OUT/gpu.txt
grep -E "^== |^test result|FAILED|panicked" $OUT/tests.txt | cut -c1-120
echo "t=$(( $(date +%s)-S ))"
gunzip -c target/device/bench_msm.gz > /tmp/b; chmod +x /tmp/b
run() { name=$1; shift; echo "== bench_msm $*" > $OUT/$name.log; timeout 240 /tmp/b "$@" --out $OUT/$name.json >> $OUT/$name.log 2>&1; echo "$name rc=$? t=$(( $(date +%s)-S ))"; grep -E '^\| G|panick|mismatch|rror|skipped' -A1 $OUT/$name.log | awk -F'|' '{print $2,$3,$4,$6,$7,$15}'; }
run bench-msm-g1-20-24 --min 20 --max 24 --g2-max 0 --reps 3 --check-max 22 --window-sweep
run bench-msm-g1-25-26 --min 25 --max 26 --g2-max 0 --reps 3 --check-max 0
run bench-msm-g2-20-24 --min 20 --max 24 --g1-max 0 --g2-max 24 --reps 3 --check-max 22 --window-sweep
run bench-msm-g2-25-26 --min 25 --max 26 --g1-max 0 --g2-max 26 --reps 3 --check-max 0
run two-chunks-g1-26 --min 26 --max 26 --g2-max 0 --reps 3 --check-max 0 --no-streamed --no-affine --resident-chunk 33554432
run two-chunks-g2-26 --min 26 --max 26 --g1-max 0 --g2-max 26 --reps 3 --check-max 0 --no-streamed --no-affine --resident-chunk 33554432
rm -rf $OUT/pack
echo "done t=$(( $(date +%s)-S ))"
