#!/bin/bash
# session 24 round 2 (device tool, carry ["target/exp24"]): `base` (5bd7dbe, SASS for sm_90 only)
# against `soa` (the same with the batch-affine level arrays as structures of arrays: every x,
# then every y, so that msm_affine_pairs reads only x; SASS for sm_90 only): soa checked against
# blst first, then alternately; then ncu on soa's msm_affine_pairs_g1 (G1 2^22, first two launches).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run24b.txt) 2>&1
S=$(date +%s)
for b in base soa; do gunzip -c target/exp24/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
echo "== soa checked against blst: G1 2^20-2^22, G2 2^20-2^21 t=0"
timeout 150 /tmp/msm_soa --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
for round in 1 2; do for b in base soa; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base soa; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base soa; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
for b in base soa; do
  echo "== ncu msm_affine_pairs_g1 $b t=$(( $(date +%s)-S ))"
  timeout 100 ncu --clock-control none -k regex:'^msm_affine_pairs_g1$' -c 3 --metrics $M /tmp/msm_$b --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 $A > $OUT/ncu-pairs-g1-$b.txt 2>&1
  grep -E 'msm_affine_pairs_g1 \(|duration|bytes|pct_of' $OUT/ncu-pairs-g1-$b.txt | awk '{print $1,$2,$NF}'
done
echo "done t=$(( $(date +%s)-S ))"
