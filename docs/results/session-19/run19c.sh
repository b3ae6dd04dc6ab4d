#!/bin/bash
# session 19 round 3: G1's first-round pairs reading a padded copy of the chunk's x
# coordinates (padx) against head (6ba0b9a), alternately.
cd "$(dirname "$0")/../../../target/exp18"
for b in head padx; do gunzip -c bench_$b.gz > /tmp/bench_$b; chmod +x /tmp/bench_$b; done
G='^\| G|panick|mismatch|rror'
echo "== check padx G1 2^20-2^22, G2 2^20"
/tmp/bench_padx --min 20 --max 22 --g2-max 20 --reps 1 --no-streamed --check-max 22 2>&1 | grep -E "$G" | cut -c1-400
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do for b in head padx; do echo "== G1 2^24 r$r $b"; /tmp/bench_$b $A 2>&1 | grep -E "$G"; done; done
C="--min 26 --max 26 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0"
for b in head padx; do echo "== G1 2^26 $b"; /tmp/bench_$b $C 2>&1 | grep -E "$G"; done
B="--min 24 --max 24 --g1-max 0 --g2-max 24 --reps 5 --no-streamed --no-affine --check-max 0"
for b in head padx; do echo "== G2 2^24 $b"; /tmp/bench_$b $B 2>&1 | grep -E "$G"; done
echo "== padx G1 2^24 streamed, checked at 2^23"
/tmp/bench_padx --min 23 --max 24 --g2-max 0 --reps 3 --no-affine --check-max 23 2>&1 | grep -E "$G"
