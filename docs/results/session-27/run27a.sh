#!/bin/bash
# session 27 round 1 (device tool, carry ["target/exp25"]): `base` (aaee805, SASS for sm_90 only)
# against `bins` (the two-pass sort's digits counted per bin in shared memory by msm_digits_bins,
# each bin's buckets counted and their offsets written by the second pass): blst checks first
# (G1 2^20-2^22, 2^24; G2 2^20-2^21, 2^23), then alternately; then ncu's time for every
# digits, scan and sort kernel of one G1 2^24 and one G1 2^26 MSM of each build (and its warm-up).
# Also G1 2^26 in one chunk of 2^26 instead of two (`bins` only: --resident-chunk is new).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run27a.txt) 2>&1
S=$(date +%s)
for b in base bins; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
echo "== bins checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_bins --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 150 /tmp/msm_bins --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 2>&1 | row
timeout 150 /tmp/msm_bins --min 23 --max 23 --g1-max 0 --g2-max 23 $A --reps 1 --check-max 23 2>&1 | row
for round in 1 2; do for b in base bins; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base bins; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base bins; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
echo "== G1 2^26 bins in one chunk (--resident-chunk 2^26) t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_bins --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 --resident-chunk 67108864 2>&1 | grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"stages",$17}'
for n in 24 26; do for b in base bins; do
  echo "== ncu G1 2^$n $b t=$(( $(date +%s)-S ))"
  timeout 150 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
    -k regex:'^msm_(digits|scan|sort)' /tmp/msm_$b --min $n --max $n --g2-max 0 $A --reps 1 --check-max 0 \
    > /tmp/ncu_$b.csv 2>&1
  grep '^"[0-9]' /tmp/ncu_$b.csv | awk -F'","' '{gsub(/[",]/,"",$NF); n[$5]+=$NF; c[$5]++} END {for (k in n) printf "  %-24s %3d launches %8.3f ms\n", k, c[k], n[k]/1e6}' | sort
done; done
echo "done t=$(( $(date +%s)-S ))"
