#!/bin/bash
# session 21 round 1 (device tool, carry ["target/device", "target/exp21"]):
#   the GPU tests of the device pack (HEAD with G1's bucket weights (7, 2)), the FP64 probes,
#   then base (the pack's bench_msm) and rtail (the same code with reduce-tail-doublings.diff,
#   SASS for sm_90 only) alternately.
cd "$(dirname "$0")/../../.."
S=$(date +%s)
MSM_ARGS=skip bash target/device/run.sh --min 20 --max 20 --no-sweep > $OUT/run-sh.txt 2>&1
echo "run.sh rc=$? t=$(( $(date +%s)-S ))"; grep -E '^test result|FAILED|panicked|skipped|exit status' $OUT/run-sh.txt
cp $OUT/tests.log $OUT/tests.txt 2>/dev/null
target/exp21/fp64_rates; target/exp21/fp48_probe
cd target/exp21
gunzip -c ../device/bench_msm.gz > /tmp/bench_base; gunzip -c bench_rtail.gz > /tmp/bench_rtail; chmod +x /tmp/bench_*
G='^\| G|panick|mismatch|rror'
A="--g2-max 0 --no-streamed --no-affine"
echo "== rtail checked against blst: G1 2^22 (default and 15 bits), G2 2^21"
/tmp/bench_rtail --min 22 --max 22 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
/tmp/bench_rtail --min 22 --max 22 $A --reps 1 --check-max 22 --window-bits 15 2>&1 | grep -E "$G"
/tmp/bench_rtail --min 21 --max 21 --g1-max 0 --g2-max 21 --no-streamed --no-affine --reps 1 --check-max 21 2>&1 | grep -E "$G"
for round in 1 2; do for b in base rtail; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"; /tmp/bench_$b --min 24 --max 24 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in base rtail; do
  echo "== G1 2^26 $b"; /tmp/bench_$b --min 26 --max 26 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
  echo "== G2 2^24 $b"; /tmp/bench_$b --min 24 --max 24 --g1-max 0 --g2-max 24 --no-streamed --no-affine --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
echo "done t=$(( $(date +%s)-S ))"
