#!/bin/bash
# session 20 round 4 (device tool, carry ["target/exp18"]): window sweeps with balanced windows
# (bal2, SASS for sm_90 only) from 2^20 to 2^24, G1 and G2, to refit the planner's bucket weights.
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_bal2.gz > /tmp/b; chmod +x /tmp/b
G='^\| G|panick|mismatch|rror'
A="--no-streamed --no-affine --check-max 0 --window-sweep"
/tmp/b --min 24 --max 24 --g2-max 0 --reps 5 $A 2>&1 | grep -E "$G"
/tmp/b --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3 $A 2>&1 | grep -E "$G"
/tmp/b --min 20 --max 23 --g2-max 0 --reps 5 $A 2>&1 | grep -E "$G"
/tmp/b --min 20 --max 23 --g1-max 0 --g2-max 23 --reps 5 $A 2>&1 | grep -E "$G"
