#!/bin/bash
# session 29 round 3 (device tool, carry ["target/exp25"]): `dig` (sm_90 only: hyb, i.e. main
# at 0f9d811, with msm_scalar_digits taking the windows' bits from a 64-bit buffer refilled a
# limb at a time instead of selecting limbs by each window's offset, and fr_from_mont as a
# Montgomery reduction alone instead of fr_mul(a, 1)) against `hyb`. blst checks of dig first
# (G1 2^20-2^22 and G2 2^20-2^21, Montgomery scalars; G1 2^22 with 8-bit scalars), then
# alternately, then ncu on both builds' msm_digits_bins at G1 2^26. One archive comes back.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r29c
exec > >(tee /tmp/r29c/run29c.txt) 2>&1
S=$(date +%s)
for b in hyb dig; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
echo "== dig checked against blst t=$(( $(date +%s)-S ))"
timeout 120 /tmp/msm_dig --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
timeout 60 /tmp/msm_dig --min 22 --max 22 --g2-max 0 $A --reps 1 --check-max 22 --scalar-bits 8 2>&1 | row
for round in 1 2; do for b in hyb dig; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 60 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in hyb dig; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 80 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread
for b in hyb dig; do
  echo "== ncu msm_digits_bins $b t=$(( $(date +%s)-S ))"
  timeout 100 ncu --clock-control none -k regex:'^msm_digits_bins$' -c 1 --metrics $M /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 1 --check-max 0 > /tmp/r29c/ncu-digits-$b.txt 2>&1
  grep -E 'duration|pct_of|inst_executed|launch__' /tmp/r29c/ncu-digits-$b.txt | cut -c1-110
done
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run29c.tgz -C /tmp r29c
