#!/bin/bash
# session 30 round 1 (device tool, carry ["target/exp30"]): `sortb` (sm_90 only: 7bfd3cf with
# the two-pass sort's second pass loading each bin's entries 16 per thread at once, in both its
# count and its place loops, and the first pass claiming its bins' room two per thread at once)
# against `base` (the sm_90 build of 7bfd3cf). blst checks of sortb first (G1 2^20-2^23, whose
# sort runs in two passes from 2^22; G1 2^24 with 8-bit scalars, whose bins overflow the second
# pass's stage; G2 2^20-2^21), then alternately, then ncu on both builds' sort passes at G1 2^26.
# One archive comes back.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r30a
exec > >(tee /tmp/r30a/run30a.txt) 2>&1
S=$(date +%s)
for b in base sortb; do gunzip -c target/exp30/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
echo "== sortb checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_sortb --min 20 --max 23 --g2-max 21 $A --reps 1 --check-max 23 2>&1 | row
timeout 120 /tmp/msm_sortb --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
for round in 1 2; do for b in base sortb; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 60 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base sortb; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 80 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base sortb; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 80 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,launch__registers_per_thread
for b in base sortb; do
  echo "== ncu sort passes $b t=$(( $(date +%s)-S ))"
  timeout 100 ncu --clock-control none -k regex:'^msm_sort_bin' -c 2 --metrics $M /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 1 --check-max 0 > /tmp/r30a/ncu-sort-$b.txt 2>&1
  grep -E '^  msm_|duration|dram__|pct_of|ratio|launch__' /tmp/r30a/ncu-sort-$b.txt | cut -c1-110
done
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run30a.tgz -C /tmp r30a
