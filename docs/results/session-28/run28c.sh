#!/bin/bash
# session 28 round 3 (device tool, carry ["target/device", "target/exp25"]): `bin22` (sm_90
# only: the two-pass sort's first pass takes 22 keys per thread instead of 16, so that each
# bin's run in a tile is 1.375 times as long; ranks held in 16 bits, two to a register; each
# bin's count and destination share one counter) against the device pack of run28b.sh
# (`base`). blst checks of bin22 first (G1 2^20-2^22, G1 2^24, G1 2^24 with 8-bit scalars,
# G2 2^20-2^21), then alternately.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run28c.txt) 2>&1
S=$(date +%s)
gunzip -c target/device/bench_msm.gz > /tmp/msm_base; gunzip -c target/exp25/bench_msm_bin22.gz > /tmp/msm_bin22; chmod +x /tmp/msm_*
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
echo "== bin22 checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_bin22 --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 100 /tmp/msm_bin22 --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 2>&1 | row
timeout 100 /tmp/msm_bin22 --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
for round in 1 2; do for b in base bin22; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base bin22; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base bin22; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
