#!/bin/bash
cd "$(dirname "$0")"
gunzip -c bench_sort6.gz > /tmp/b; chmod +x /tmp/b
G='^\| G|panick|mismatch|rror'
/tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 24 2>&1 | grep -E "$G" | cut -c1-300
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do echo "== G1 2^24 r$r"; /tmp/b $A 2>&1 | grep -E "$G"; done
echo "== G1 2^26"; /tmp/b --min 26 --max 26 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0 2>&1 | grep -E "$G"
