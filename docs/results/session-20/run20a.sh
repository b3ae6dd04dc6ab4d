#!/bin/bash
# session 20 round 1 (device tool, carry ["target/exp18"]): e85258a (bench_e852, SASS sm_90 only).
# 1. the window sweep with the two-pass sort's skew fix (18..21 bits at G1 2^24, 24..27 at 2^26, G2 2^24);
# 2. G2 with skewed scalars (--scalar-bits 8), checked against blst at 2^23, timed at 2^24.
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_e852.gz > /tmp/b; chmod +x /tmp/b
G='^\| G|panick|mismatch|rror'
S=$(date +%s)
echo "== G2 2^23 scalars below 2^8, checked"; /tmp/b --min 23 --max 23 --g1-max 0 --g2-max 23 --reps 1 --no-streamed --no-affine --check-max 23 --scalar-bits 8 2>&1 | grep -E "$G"; echo "t=$(( $(date +%s)-S ))"
echo "== G2 2^24 scalars below 2^8"; /tmp/b --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3 --no-streamed --no-affine --check-max 0 --scalar-bits 8 2>&1 | grep -E "$G"; echo "t=$(( $(date +%s)-S ))"
echo "== G1 2^24 sweep"; /tmp/b --min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0 --window-sweep 2>&1 | grep -E "$G"; echo "t=$(( $(date +%s)-S ))"
echo "== G2 2^24 sweep"; /tmp/b --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3 --no-streamed --no-affine --check-max 0 --window-sweep 2>&1 | grep -E "$G"; echo "t=$(( $(date +%s)-S ))"
echo "== G1 2^26 sweep"; /tmp/b --min 26 --max 26 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0 --window-sweep 2>&1 | grep -E "$G"; echo "t=$(( $(date +%s)-S ))"
