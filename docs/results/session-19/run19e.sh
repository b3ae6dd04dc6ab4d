#!/bin/bash
# session 19 round 5: G1 2^24 with skewed scalars (random below 2^B, `--scalar-bits B`) against
# uniform ones: the sort's cost when the digits crowd a few buckets (binary `skew`: 6ba0b9a's
# code with the `--scalar-bits` flag).
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_skew.gz > /tmp/bench_skew; chmod +x /tmp/bench_skew
G='^\| G|panick|mismatch|rror'
A="--min 24 --max 24 --g2-max 0 --reps 3 --no-streamed --no-affine"
echo "== uniform"; /tmp/bench_skew $A --check-max 0 2>&1 | grep -E "$G"
for b in 64 32 16 8; do
  echo "== --scalar-bits $b"; /tmp/bench_skew $A --check-max 0 --scalar-bits $b 2>&1 | grep -E "$G"
done
echo "== --scalar-bits 8, 2^20, checked"; /tmp/bench_skew --min 20 --max 20 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 20 --scalar-bits 8 2>&1 | grep -E "$G"
