#!/bin/bash
# session 19 round 6: the second pass of the two-pass sort sharing bins over its stage among all
# blocks (bigbins) against 6ba0b9a with the --scalar-bits flag (skew): uniform and skewed scalars.
cd "$(dirname "$0")/../../../target/exp18"
for b in skew bigbins; do gunzip -c bench_$b.gz > /tmp/bench_$b; chmod +x /tmp/bench_$b; done
G='^\| G|panick|mismatch|rror'
echo "== check bigbins: G1 2^23 scalars below 2^8 and uniform, G2 2^23 below 2^8"
/tmp/bench_bigbins --min 23 --max 23 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 23 --scalar-bits 8 2>&1 | grep -E "$G"
/tmp/bench_bigbins --min 23 --max 23 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 23 2>&1 | grep -E "$G"
/tmp/bench_bigbins --min 23 --max 23 --g1-max 0 --g2-max 23 --reps 1 --no-streamed --no-affine --check-max 23 --scalar-bits 8 2>&1 | grep -E "$G"
A="--min 24 --max 24 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0"
for b in skew bigbins; do
  echo "== $b uniform"; /tmp/bench_$b $A 2>&1 | grep -E "$G"
  for s in 8 64; do echo "== $b --scalar-bits $s"; /tmp/bench_$b $A --scalar-bits $s 2>&1 | grep -E "$G"; done
done
echo "== bigbins uniform again"; /tmp/bench_bigbins $A 2>&1 | grep -E "$G"
