#!/bin/bash
# session 20 round 2 (device tool, carry ["target/exp18"]), each bench_msm built with SASS for sm_90 only:
#   e852: e85258a (base);  rb3: msm_reduce_g1 with __launch_bounds__(128, 3);
#   bal: balanced windows (widths c and c - 1 adding up to 255: G1 2^24 eight windows of 20 bits, five of 19).
cd "$(dirname "$0")/../../../target/exp18"
for b in e852 rb3 bal; do gunzip -c bench_$b.gz > /tmp/bench_$b; chmod +x /tmp/bench_$b; done
G='^\| G|panick|mismatch|rror'
A="--g2-max 0 --no-streamed --no-affine"
echo "== bal checked against blst: G1 2^24; 2^22 at 19 bits (3 of 19, 11 of 18); 2^22 scalars below 2^8 at 19 bits"
/tmp/bench_bal --min 24 --max 24 $A --reps 1 --check-max 24 2>&1 | grep -E "$G"
/tmp/bench_bal --min 22 --max 22 $A --reps 1 --check-max 22 --window-bits 19 2>&1 | grep -E "$G"
/tmp/bench_bal --min 22 --max 22 $A --reps 1 --check-max 22 --window-bits 19 --scalar-bits 8 2>&1 | grep -E "$G"
echo "== rb3 checked: G1 2^23"
/tmp/bench_rb3 --min 23 --max 23 $A --reps 1 --check-max 23 2>&1 | grep -E "$G"
for round in 1 2; do for b in e852 rb3 bal; do
  echo "== G1 2^24 $b ($round)"; /tmp/bench_$b --min 24 --max 24 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for b in e852 rb3 bal; do
  echo "== G1 2^26 $b"; /tmp/bench_$b --min 26 --max 26 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
done
echo "== bal sweeps"
/tmp/bench_bal --min 24 --max 24 $A --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
/tmp/bench_bal --min 26 --max 26 $A --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
/tmp/bench_bal --min 24 --max 24 --g1-max 0 --g2-max 24 --no-streamed --no-affine --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
