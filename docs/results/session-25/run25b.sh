#!/bin/bash
# session 25 round 2 (run in session 26; device tool, carry ["target/exp25"]): the gather probe
# again, its output kept this time, then the duration of every kernel of G1 2^24 (the `base`
# build, aaee805, SASS for sm_90 only) under ncu, one metric, so that the rounds' time can be
# split by kernel and round (ncu-g1-2p24.csv: one row per kernel launch, in launch order).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run25b.txt) 2>&1
S=$(date +%s)
echo "== gather probe t=$(( $(date +%s)-S ))"
nvcc -O3 -arch=sm_90 -o /tmp/gp docs/results/session-25/gather_probe.cu && /tmp/gp
gunzip -c target/exp25/bench_msm_base.gz > /tmp/msm_base; chmod +x /tmp/msm_base
echo "== ncu, every kernel of G1 2^24 t=$(( $(date +%s)-S ))"
timeout 400 ncu --csv --clock-control none --metrics gpu__time_duration.sum /tmp/msm_base --min 24 --max 24 \
  --g2-max 0 --no-streamed --no-affine --reps 1 --check-max 0 > /tmp/ncu.csv 2>/tmp/ncu.err
echo "ncu rc=$?"; tail -3 /tmp/ncu.err
grep -E '^"[0-9]' /tmp/ncu.csv | gzip > $OUT/ncu-g1-2p24.csv.gz
grep -E '^"[0-9]' /tmp/ncu.csv | wc -l
echo "done t=$(( $(date +%s)-S ))"
