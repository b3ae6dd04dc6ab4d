#!/bin/bash
# session 26 round 1 (device tool, carry ["target/exp25"]): `base` (aaee805, SASS for sm_90 only)
# against `reduce` (the same with each batch-affine group of windows reducing its buckets on its
# own lane right after its rounds, in the MSM's last chunk): blst checks first (G1 2^20-2^22,
# one group; G1 2^24, four groups; G2 2^20-2^21, and 2^23, three groups), then alternately.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run26a.txt) 2>&1
S=$(date +%s)
for b in base reduce; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
echo "== reduce checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_reduce --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 150 /tmp/msm_reduce --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 2>&1 | row
timeout 150 /tmp/msm_reduce --min 23 --max 23 --g1-max 0 --g2-max 23 $A --reps 1 --check-max 23 2>&1 | row
for round in 1 2; do for b in base reduce; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base reduce; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base reduce; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
