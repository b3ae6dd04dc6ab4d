#!/bin/bash
# session 29 round 4 (device tool, carry ["target/exp25"]): `sort40` (sm_90 only: main at
# 4cb9bb6 with the sort's first pass reading its tile's keys twice instead of holding them,
# entries staged in 4 bytes, tiles of 40 keys per thread instead of 22, the write-out bin by
# bin) and `sort2` (sort40 with the second pass staging 4 bytes an entry, so half as many bins,
# its write-out bucket by bucket) against `dig` (4cb9bb6's MSM code, run29c.sh). blst checks
# of both first (G1 2^20-2^22, G1 2^24 with 8-bit scalars, whose bins overflow the second
# pass's stage, G2 2^20-2^21), then alternately, then ncu on sort2's two passes at G1 2^26.
# One archive comes back.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r29d
exec > >(tee /tmp/r29d/run29d.txt) 2>&1
S=$(date +%s)
for b in dig sort40 sort2; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"chk",$15,"stages",$17}' ; }
for b in sort40 sort2; do
  echo "== $b checked against blst t=$(( $(date +%s)-S ))"
  timeout 120 /tmp/msm_$b --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
  timeout 120 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
done
for round in 1 2; do for b in dig sort40 sort2; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 60 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in dig sort40 sort2; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 80 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_write.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,launch__registers_per_thread
for b in sort40 sort2; do
  echo "== ncu sort passes $b t=$(( $(date +%s)-S ))"
  timeout 100 ncu --clock-control none -k regex:'^msm_sort_bin' -c 2 --metrics $M /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 1 --check-max 0 > /tmp/r29d/ncu-sort-$b.txt 2>&1
  grep -E '^  msm_|duration|dram__|lts__|pct_of|ratio|launch__' /tmp/r29d/ncu-sort-$b.txt | cut -c1-110
done
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run29d.tgz -C /tmp r29d
