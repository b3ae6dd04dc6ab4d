#!/bin/bash
# session 21 round 5 (device tool, carry ["target/exp21"]): the batch-affine round kernels with
# grid-stride loops (grid-stride.diff), launched on at most CUZK_SUMS_BLOCKS_PER_SM and
# CUZK_PAIRS_BLOCKS_PER_SM blocks per multiprocessor, so that one lane's sums and the other's
# pairs can be resident on the same multiprocessors at once; against the round-1 pack (base).
cd "$(dirname "$0")/../../../target/exp21"
gunzip -c bench_msm_base.gz > /tmp/bench_base; gunzip -c bench_grid.gz > /tmp/bench_grid; chmod +x /tmp/bench_*
G='^\| G|panick|mismatch|rror'
A="--g2-max 0 --no-streamed --no-affine"
S=$(date +%s)
echo "== grid checked against blst (sums 3, pairs 1; then sums 1, pairs 1): G1 2^22, G2 2^21"
CUZK_SUMS_BLOCKS_PER_SM=3 CUZK_PAIRS_BLOCKS_PER_SM=1 /tmp/bench_grid --min 22 --max 22 $A --reps 1 --check-max 22 2>&1 | grep -E "$G"
CUZK_SUMS_BLOCKS_PER_SM=1 CUZK_PAIRS_BLOCKS_PER_SM=1 /tmp/bench_grid --min 21 --max 21 --g1-max 0 --g2-max 21 --no-streamed --no-affine --reps 1 --check-max 21 2>&1 | grep -E "$G"
run() { echo "== G1 2^24 $1 sums $2 pairs $3 t=$(( $(date +%s)-S ))"; CUZK_SUMS_BLOCKS_PER_SM=$2 CUZK_PAIRS_BLOCKS_PER_SM=$3 /tmp/bench_$1 --min 24 --max 24 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"; }
run base 0 0
run grid 0 0
run grid 3 1
run grid 2 2
run grid 1 3
run grid 3 0
run grid 0 1
run base 0 0
run grid 3 1
echo "== G2 2^24"
for c in "base 0 0" "grid 3 1" "grid 2 2"; do set -- $c
  echo "== G2 2^24 $1 sums $2 pairs $3"; CUZK_SUMS_BLOCKS_PER_SM=$2 CUZK_PAIRS_BLOCKS_PER_SM=$3 /tmp/bench_$1 --min 24 --max 24 --g1-max 0 --g2-max 24 --no-streamed --no-affine --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
echo "done t=$(( $(date +%s)-S ))"
