#!/bin/bash
# session 19 round 1: the batch-affine levels word-major (soa) against head (6ba0b9a), alternately,
# and soa with the L2 fetch granularity at 32 bytes (l2-32); G1 2^24.
cd "$(dirname "$0")/../../../target/exp18"
for b in head soa; do gunzip -c bench_$b.gz > /tmp/bench_$b; chmod +x /tmp/bench_$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
G='^\| G|panick|mismatch|rror|L2 fetch'
echo "== check soa G1/G2 2^20-2^21, l2-32"
/tmp/bench_soa --min 20 --max 21 --g2-max 21 --reps 1 --no-streamed --check-max 21 --l2-fetch 32 2>&1 | grep -E "$G" | cut -c1-300
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G1 2^24 r$r head"; /tmp/bench_head $A 2>&1 | grep -E "$G"
  echo "== G1 2^24 r$r soa"; /tmp/bench_soa $A 2>&1 | grep -E "$G"
  echo "== G1 2^24 r$r soa l2-32"; /tmp/bench_soa $A --l2-fetch 32 2>&1 | grep -E "$G"
done
