#!/bin/bash
# session 28 round 1 (device tool, carry ["target/exp25"]): `head28` (db44efc, sm_90 only; the
# first device run of msm_sort_big, b0914ea). blst checks (G1 2^20-2^22, G1 2^24 with 8-bit
# scalars, whose bins overflow the second pass's stage and go through msm_sort_big; G2
# 2^20-2^21); G2 2^26 in two chunks of 2^25 (the default) and in one of 2^26 (session 27's
# run27d.sh, never run); G1 2^26 in one chunk, with the default batch-affine scratch (a
# tenth of the device) and with twice that; G1 2^24 twice, and with twice the batch-affine
# scratch; the window sweep at G1 2^24.
# Full rows (awk -F'|': $2 group, $3 n, $4 window, $7 resident ms, $15 checked, $17 stages).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run28a.txt) 2>&1
S=$(date +%s)
gunzip -c target/exp25/bench_msm_head28.gz > /tmp/msm; chmod +x /tmp/msm
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
echo "== checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 100 /tmp/msm --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
for chunk in 33554432 67108864; do
  echo "== G2 2^26 chunk $chunk t=$(( $(date +%s)-S ))"
  timeout 150 /tmp/msm --min 26 --max 26 --g1-max 0 --g2-max 26 $A --reps 2 --check-max 0 --resident-chunk $chunk 2>&1 | grep -E "^\| G|$G"
done
echo "== G1 2^26 one chunk t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 --resident-chunk 67108864 2>&1 | grep -E "^\| G|$G"
echo "== G1 2^26 one chunk, affine scratch 28e9 t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 --resident-chunk 67108864 --affine-scratch 28000000000 2>&1 | grep -E "^\| G|$G"
for round in 1 2; do
  echo "== G1 2^24 ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done
echo "== G1 2^24 affine scratch 28e9 t=$(( $(date +%s)-S ))"
timeout 100 /tmp/msm --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 --affine-scratch 28000000000 2>&1 | row
echo "== G1 2^24 window sweep t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm --min 24 --max 24 --g2-max 0 $A --reps 3 --check-max 0 --window-sweep 2>&1 | grep -vE "^\s*$" | tail -30
echo "done t=$(( $(date +%s)-S ))"
