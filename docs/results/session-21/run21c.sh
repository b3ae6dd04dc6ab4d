#!/bin/bash
# session 21 round 3 (device tool, carry ["target/device", "target/exp21"]): the device pack of the
# Fr reduction factor from constant memory (every product of fr_mul one IMAD.WIDE.U32(.X)): its
# GPU tests and NTT benchmark (main table: run.sh's bench_ntt, --min 20 --max 28 --no-sweep),
# then the NTT and a G1 MSM against the packs before it (base), alternately.
cd "$(dirname "$0")/../../.."
S=$(date +%s)
MSM_ARGS=skip bash target/device/run.sh --min 20 --max 28 --no-sweep > $OUT/run-sh.txt 2>&1
echo "run.sh rc=$? t=$(( $(date +%s)-S ))"; grep -E '^test result|FAILED|panicked|exit status' $OUT/run-sh.txt
grep -E 'Fr multiplication|^\| (24|27) \| Forward \| N->R' $OUT/bench-ntt.log
for b in ntt msm; do gunzip -c target/exp21/bench_${b}_base.gz > /tmp/${b}_base; gunzip -c target/device/bench_$b.gz > /tmp/${b}_new; done; chmod +x /tmp/*_base /tmp/*_new
for round in 1 2; do for b in base new; do
  echo "== bench_ntt $b ($round) t=$(( $(date +%s)-S ))"
  /tmp/ntt_$b --min 24 --max 24 --no-sweep --no-check 2>&1 | grep -E 'Fr multiplication|^\| 24 \|'
  /tmp/ntt_$b --min 27 --max 27 --no-sweep --no-check 2>&1 | grep -E '^\| 27 \|'
done; done
for b in base new; do
  echo "== G1 2^24 $b"; /tmp/msm_$b --min 24 --max 24 --g2-max 0 --no-streamed --no-affine --reps 3 --check-max 0 2>&1 | grep -E '^\| G|panick|mismatch|rror|Fp multiplications'
done
echo "done t=$(( $(date +%s)-S ))"
