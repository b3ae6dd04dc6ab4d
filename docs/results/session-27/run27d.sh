#!/bin/bash
# session 27 round 4 (device tool, carry ["target/exp25"]): the `wbins` build's resident G2 MSM
# of 2^26 points in one chunk (`--resident-chunk 67108864`) against the default two chunks of
# 2^25 (G1's pair is in run27c.txt), full rows: the last column is the plan's device memory in
# MiB.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run27d.txt) 2>&1
S=$(date +%s)
gunzip -c target/exp25/bench_msm_wbins.gz > /tmp/msm_wbins; chmod +x /tmp/msm_wbins
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" ; }
for chunk in 33554432 67108864; do
  echo "== G2 2^26 chunk $chunk t=$(( $(date +%s)-S ))"
  timeout 150 /tmp/msm_wbins --min 26 --max 26 --g1-max 0 --g2-max 26 $A --reps 2 --check-max 0 --resident-chunk $chunk 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
