#!/bin/bash
# session 27 round 3 (device tool, carry ["target/exp25"]): `bins` (b5d4d0e, sm_90 only) against
# `wbins` (the same with bins sized per window: a window of c bits has bins twice as wide as
# one of c - 1 bits, which uses only the lower half of its buckets, so G1 2^26's 2^25-point
# chunks sort in 2048 bins per window instead of 4096 and its wide windows' first-pass runs
# double). blst checks of `wbins` first (G1 2^20-2^22, 2^24, 2^24 with 8-bit scalars, whose
# bins overflow the second pass's stage; G2 2^20-2^21, 2^23; G1 2^26 in one chunk of 2^26,
# which sorts in two passes only with per-window bins), then alternately.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run27c.txt) 2>&1
S=$(date +%s)
for b in bins wbins; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
echo "== wbins checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_wbins --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 100 /tmp/msm_wbins --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 2>&1 | row
timeout 100 /tmp/msm_wbins --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
timeout 150 /tmp/msm_wbins --min 23 --max 23 --g1-max 0 --g2-max 23 $A --reps 1 --check-max 23 2>&1 | row
echo "== G1 2^26 wbins in one chunk, checked t=$(( $(date +%s)-S ))"
timeout 200 /tmp/msm_wbins --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 26 --resident-chunk 67108864 2>&1 | row
for round in 1 2; do for b in bins wbins; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for round in 1 2; do for b in bins wbins; do
  echo "== G1 2^26 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done; done
for b in bins wbins; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
