#!/bin/bash
# session 26 round 2 (device tool, carry ["target/exp25"]): `base` (aaee805, SASS for sm_90 only)
# against `prescale` (msm_reduce scaling each level's running sums by the previous level's
# segment, so that a level doubles by that segment alone, and G1's later levels summing the
# input C in the loop of the running sums): blst checks first, then alternately; then the
# duration of each msm_reduce launch of the last G1 and the last G2 2^24 MSM under ncu (the
# last six launches of each kernel).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run26b.txt) 2>&1
S=$(date +%s)
for b in base prescale; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
echo "== prescale checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_prescale --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 150 /tmp/msm_prescale --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 2>&1 | row
for round in 1 2; do for b in base prescale; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for round in 1 2; do for b in base prescale; do
  echo "== G2 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done; done
for b in base prescale; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base prescale; do
  echo "== ncu msm_reduce_g1/g2 $b t=$(( $(date +%s)-S ))"
  timeout 120 ncu --csv --clock-control none -k regex:'^msm_reduce_g[12]$' --metrics gpu__time_duration.sum \
    /tmp/msm_$b --min 24 --max 24 --g2-max 24 $A --reps 1 --check-max 0 2>/dev/null | grep -E '^"[0-9]' \
    | awk -F'","' '{n[$5]++; v[$5 SUBSEP n[$5]]=$5 " grid " $9 " " $NF} END {for (g in n) for (i=n[g]-5; i<=n[g]; i++) print v[g SUBSEP i]}' | tr -d '"'
done
echo "done t=$(( $(date +%s)-S ))"
