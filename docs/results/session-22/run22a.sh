#!/bin/bash
# session 22 round 1 (device tool, carry ["target/device", "target/exp22"]):
#   the device pack of the full first-pass twiddle table (NttConfig::full_twiddle_max_log): its
#   GPU tests, the NTT sweep (which has the default without the table beside it) and main table;
#   then the NTT with and without the table alternately; then the MSM of the pack (base) and of
#   the chain-start marker (chain: kernels/msm/affine.cuh msm_chain_start, SASS for sm_90 only),
#   checked against blst, then alternately.
cd "$(dirname "$0")/../../.."
S=$(date +%s)
MSM_ARGS=skip bash target/device/run.sh --min 20 --max 28 > $OUT/run-sh.txt 2>&1
echo "run.sh rc=$? t=$(( $(date +%s)-S ))"; grep -E '^test result|FAILED|panicked|exit status' $OUT/run-sh.txt
cp $OUT/tests.log $OUT/tests.txt 2>/dev/null
grep -E 'Fr multiplication|^\| (20|24|27) \| 2 \| 9 \| 9 \|' $OUT/bench-ntt.log
grep -E '^\| (24|27|28) \| Forward \| N->R' $OUT/bench-ntt.log
for b in ntt msm; do gunzip -c target/device/bench_$b.gz > /tmp/${b}_base; done
gunzip -c target/exp22/bench_msm_chain.gz > /tmp/msm_chain; chmod +x /tmp/*_base /tmp/msm_chain
for round in 1 2; do for c in 2,9,9,1,27 2,9,9,1,0; do
  echo "== bench_ntt --config $c ($round) t=$(( $(date +%s)-S ))"
  /tmp/ntt_base --min 24 --max 24 --no-sweep --no-check --config $c 2>&1 | grep -E '^\| 24 \| Forward'
  /tmp/ntt_base --min 27 --max 27 --no-sweep --no-check --config $c 2>&1 | grep -E '^\| 27 \| Forward'
done; done
G='^\| G|panick|mismatch|rror'
A="--no-streamed --no-affine"
echo "== chain checked against blst: G1 2^22, G2 2^21 t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_chain --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
for round in 1 2; do for b in base chain; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in base chain; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
for b in base chain; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"; timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
echo "done t=$(( $(date +%s)-S ))"
