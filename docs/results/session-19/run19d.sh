#!/bin/bash
# session 19 round 4: G1 2^24's stages with windows of 18, 19 and 20 bits (head, 6ba0b9a), to see
# why the sweep measured 19 bits slower than 18.
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_head.gz > /tmp/bench_head; chmod +x /tmp/bench_head
G='^\| G|panick|mismatch|rror'
for c in 18 19 20; do
  echo "== G1 2^24 --window-bits $c"
  /tmp/bench_head --min 24 --max 24 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0 --window-bits $c 2>&1 | grep -E "$G"
done
