#!/bin/bash
# session 29 round 2 (device tool, carry ["target/exp25"]): where the sort and the batch
# inversion spend their time, on `hyb` (the sm_90 build of main's MSM code since 0f9d811).
# ncu on the counting sort's kernels of one G1 2^26 MSM (one chunk of 2^26: the warm-up's
# launches) and of G1 2^24 (four window groups), and on the inversion tree's launches of the
# first group's rounds at G1 2^24. One archive comes back (run29b.tgz).
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r29b
exec > >(tee /tmp/r29b/run29b.txt) 2>&1
S=$(date +%s)
gunzip -c target/exp25/bench_msm_hyb.gz > /tmp/msm_hyb; chmod +x /tmp/msm_hyb
A="--no-streamed --no-affine --reps 1 --check-max 0"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread
SORT='regex:^msm_(digits_bins|sort_bins|sort_bin_buckets|sort_big|scan_tiles|scan_add)$'
echo "== ncu sort G1 2^26 t=$(( $(date +%s)-S ))"
timeout 200 ncu --clock-control none -k "$SORT" -c 6 --metrics $M /tmp/msm_hyb --min 26 --max 26 --g2-max 0 $A > /tmp/r29b/ncu-sort-g1-26.txt 2>&1
grep -E '^  msm_|duration|dram__|lts__|warps_active|issue_active|ratio|pipe_|launch__' /tmp/r29b/ncu-sort-g1-26.txt | cut -c1-110
echo "== ncu sort G1 2^24 t=$(( $(date +%s)-S ))"
timeout 120 ncu --clock-control none -k "$SORT" -c 6 --metrics $M /tmp/msm_hyb --min 24 --max 24 --g2-max 0 $A > /tmp/r29b/ncu-sort-g1-24.txt 2>&1
grep -E '^  msm_|duration|dram__|lts__|warps_active|issue_active|ratio|pipe_|launch__' /tmp/r29b/ncu-sort-g1-24.txt | cut -c1-110
echo "== ncu inversion G1 2^24 t=$(( $(date +%s)-S ))"
timeout 150 ncu --clock-control none -k 'regex:^msm_(inv_up|inv_top|inv_down|affine_pairs|affine_sums)_g1$' -c 15 --metrics $M /tmp/msm_hyb --min 24 --max 24 --g2-max 0 $A > /tmp/r29b/ncu-inv-g1-24.txt 2>&1
grep -E '^  msm_|duration|dram__|warps_active|issue_active|latency_per|long_scoreboard|pipe_|launch__' /tmp/r29b/ncu-inv-g1-24.txt | cut -c1-110
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run29b.tgz -C /tmp r29b
