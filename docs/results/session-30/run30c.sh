#!/bin/bash
# session 30 round 3 (device tool, carry ["target/exp30"]): the GPU tests of cuzk-msm (`gpu::`,
# release, sm_90 only) of the code to be committed (`final`: fuse with the fused reduction in
# G1 only), then `final` against `base` (the sm_90 build of 7bfd3cf), alternately.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r30c
exec > >(tee /tmp/r30c/run30c.txt) 2>&1
S=$(date +%s)
for b in base final; do gunzip -c target/exp30/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
gunzip -c target/exp30/msm_tests_final.gz > /tmp/msm_tests; chmod +x /tmp/msm_tests
echo "== cuzk-msm GPU tests t=$(( $(date +%s)-S ))"
timeout 300 /tmp/msm_tests gpu:: 2>&1 | grep -E "^test |test result|panicked|FAILED" | tee /tmp/r30c/tests.txt | grep -E "test result|panicked|FAILED"
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
run() { # name binary args...
  local n=$1 b=$2; shift 2
  echo "== $n t=$(( $(date +%s)-S ))"
  timeout 90 /tmp/msm_$b "$@" $A --check-max 0 2>&1 | row
}
for round in 1 2; do
  run "G1 2^24 base ($round)" base --min 24 --max 24 --g2-max 0 --reps 5
  run "G1 2^24 final ($round)" final --min 24 --max 24 --g2-max 0 --reps 5
done
run "G1 2^26 final (1)" final --min 26 --max 26 --g2-max 0 --reps 3
run "G1 2^26 base" base --min 26 --max 26 --g2-max 0 --reps 3
run "G1 2^26 final (2)" final --min 26 --max 26 --g2-max 0 --reps 3
run "G2 2^24 final" final --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run30c.tgz -C /tmp r30c
