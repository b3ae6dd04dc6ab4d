#!/bin/bash
# session 30 round 5 (device tool, carry ["target/exp30"]): cuzk-msm's GPU tests (`gpu::`,
# release, sm_90 only) of e11a580 (a single fused chunk allocates no buckets; its check_msm
# also runs G2 with the fused first reduction level), then its bench_msm once at G1 2^26.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r30e
exec > >(tee /tmp/r30e/run30e.txt) 2>&1
S=$(date +%s)
gunzip -c target/exp30/bench_msm_final.gz > /tmp/msm_final; chmod +x /tmp/msm_final
gunzip -c target/exp30/msm_tests_final.gz > /tmp/msm_tests; chmod +x /tmp/msm_tests
echo "== cuzk-msm GPU tests t=$(( $(date +%s)-S ))"
timeout 300 /tmp/msm_tests gpu:: 2>&1 | grep -E "^test |test result|panicked|FAILED" | tee /tmp/r30e/tests.txt | grep -E "test result|panicked|FAILED"
row() { grep -E "^\| G|panick|mismatch|rror" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
for n in 26; do
  echo "== G1 2^$n final t=$(( $(date +%s)-S ))"
  timeout 90 /tmp/msm_final --min $n --max $n --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run30e.tgz -C /tmp r30e
