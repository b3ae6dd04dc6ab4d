#!/bin/bash
cd "$(dirname "$0")"
gunzip -c bench_sort5.gz > /tmp/b; chmod +x /tmp/b
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
G='^\| G|panick|mismatch|rror'
echo "== check G1 2^24 stage limit 12288 (2048 bins)"
/tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 24 --sort-stage-limit 12288 2>&1 | grep -E "$G" | cut -c1-300
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G1 r$r default"; /tmp/b $A 2>&1 | grep -E "$G"
  echo "== G1 r$r limit 12288"; /tmp/b $A --sort-stage-limit 12288 2>&1 | grep -E "$G"
done
B="--min 24 --max 24 --g1-max 0 --g2-max 24 --reps 5 --no-streamed --no-affine --check-max 0"
echo "== G2 default"; /tmp/b $B 2>&1 | grep -E "$G"
echo "== G2 limit 12288"; /tmp/b $B --sort-stage-limit 12288 2>&1 | grep -E "$G"
