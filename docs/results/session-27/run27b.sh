#!/bin/bash
# session 27 round 2 (device tool, carry ["target/exp25"]): the two-pass sort's first pass in
# smaller blocks (`--sort-tile-threads 512`: 8 K-key tiles, two blocks per multiprocessor at
# G1 2^24's 2048 bins per window) against the default (1024 threads, 16 K-key tiles, one block
# per multiprocessor) with the `bins` build, alternately; then ncu's speed-of-light, memory and
# warp-state sections on the first pass's first launch at G1 2^24 (text in ncu-sort-bins.txt).
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run27b.txt) 2>&1
S=$(date +%s)
gunzip -c target/exp25/bench_msm_bins.gz > /tmp/msm_bins; chmod +x /tmp/msm_bins
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"stages",$17}' ; }
for round in 1 2; do for t in 1024 512; do
  echo "== G1 2^24 tile threads $t ($round) t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_bins --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 --sort-tile-threads $t 2>&1 | row
done; done
echo "== G1 2^24 tile threads 512 checked against blst t=$(( $(date +%s)-S ))"
timeout 100 /tmp/msm_bins --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --sort-tile-threads 512 2>&1 | row
for t in 1024 512; do
  echo "== G1 2^26 tile threads $t t=$(( $(date +%s)-S ))"
  timeout 100 /tmp/msm_bins --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 --sort-tile-threads $t 2>&1 | row
done
echo "== ncu msm_sort_bins G1 2^24 t=$(( $(date +%s)-S ))"
timeout 150 ncu --clock-control none -k regex:'^msm_sort_bins$' --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum \
  /tmp/msm_bins --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 0 > $OUT/ncu-sort-bins.txt 2>&1
echo "ncu rc=$?"
grep -E 'Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Achieved Occupancy|Warp Cycles Per Issued|Stall|dram__bytes|lts__t_sectors|Theoretical Occupancy|Block Limit' $OUT/ncu-sort-bins.txt | sed 's/  */ /g' | cut -c1-160
echo "done t=$(( $(date +%s)-S ))"
