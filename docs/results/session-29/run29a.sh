#!/bin/bash
# session 29 round 1 (device tool, carry ["target/exp25"]): `hyb` (sm_90 only: bin22 with the
# batch inversion going up its tree only to the first level of at most one wave of blocks,
# 540 672 values, which then inverts blockwise, instead of up to one block) against `bin22`
# (run28c.sh). blst checks of hyb first (G1 2^20-2^22, G2 2^20-2^21: their first rounds go up
# the tree), then alternately, G1 only , then G2 2^26 for both (the 22-key first pass was never measured there).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run29a.txt) 2>&1
S=$(date +%s)
for b in bin22 hyb; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
echo "== hyb checked against blst t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_hyb --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
for round in 1 2; do for b in bin22 hyb; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 60 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in bin22 hyb; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 80 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
for b in bin22 hyb; do
  echo "== G2 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 150 /tmp/msm_$b --min 26 --max 26 --g1-max 0 --g2-max 26 $A --reps 3 --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
