#!/bin/bash
# session 25 round 1 (device tool, carry ["target/exp25"]): `base` (aaee805, SASS for sm_90
# only) against `coop` (the same with msm_affine_pairs loading level 0's x coordinates a warp
# at a time, three (G1) or six (G2) lanes a point: msm_warp_load_x) and `sums` (coop, and G1's
# msm_affine_sums copying level 0's whole points into shared memory a warp at a time with
# cp.async: msm_warp_stage_points): each checked against blst first, then alternately; then ncu
# on the builds' msm_affine_pairs_g1 and msm_affine_sums_g1 (G1 2^22, first two launches).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run25a.txt) 2>&1
S=$(date +%s)
for b in base coop sums; do gunzip -c target/exp25/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"chk",$15,"stages",$17}' ; }
for b in coop sums; do
  echo "== $b checked against blst: G1 2^20-2^22, G2 2^20-2^21 t=$(( $(date +%s)-S ))"
  timeout 150 /tmp/msm_$b --min 20 --max 22 --g2-max 21 $A --reps 1 --check-max 22 2>&1 | row
done
for round in 1 2; do for b in base coop sums; do
  echo "== G1 2^24 $b ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
done; done
for b in base coop; do
  echo "== G2 2^24 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 24 --max 24 --g1-max 0 --g2-max 24 $A --reps 3 --check-max 0 2>&1 | row
done
for b in base coop sums; do
  echo "== G1 2^26 $b t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
for b in base coop sums; do
  echo "== ncu msm_affine_pairs_g1 and msm_affine_sums_g1 $b t=$(( $(date +%s)-S ))"
  timeout 100 ncu --clock-control none -k regex:'^msm_affine_(pairs|sums)_g1$' -c 4 --metrics $M /tmp/msm_$b --min 22 --max 22 --g2-max 0 --reps 1 --check-max 0 $A > /tmp/ncu-$b.txt 2>&1
  grep -E 'msm_affine_(pairs|sums)_g1 \(|duration|bytes|pct_of|l1tex|ratio' /tmp/ncu-$b.txt | awk '{print $1,$2,$NF}'
done
echo "done t=$(( $(date +%s)-S ))"
