#!/bin/bash
# session 20 round 3 (device tool, carry ["target/exp18"]), SASS for sm_90 only:
#   e852: e85258a (base);  bal2: balanced windows, the sort's bins and parts sized for the
#   narrow windows' denser buckets (round 2's bal sent those bins to the slow shared path).
# Then window sweeps with bal2, since round 2's sweep measured 17 bits at G1 2^24 in 93.2 ms.
cd "$(dirname "$0")/../../../target/exp18"
for b in e852 bal2; do gunzip -c bench_$b.gz > /tmp/bench_$b; chmod +x /tmp/bench_$b; done
G='^\| G|panick|mismatch|rror'
A="--g2-max 0 --no-streamed --no-affine"
echo "== bal2 checked against blst: G1 2^24; 2^22 at 19 bits; 2^22 at 19 bits, scalars below 2^8"
/tmp/bench_bal2 --min 24 --max 24 $A --reps 1 --check-max 24 2>&1 | grep -E "$G"
/tmp/bench_bal2 --min 22 --max 22 $A --reps 1 --check-max 22 --window-bits 19 2>&1 | grep -E "$G"
/tmp/bench_bal2 --min 22 --max 22 $A --reps 1 --check-max 22 --window-bits 19 --scalar-bits 8 2>&1 | grep -E "$G"
for round in 1 2; do for b in e852 bal2; do
  echo "== G1 2^24 $b ($round)"; /tmp/bench_$b --min 24 --max 24 $A --reps 5 --check-max 0 2>&1 | grep -E "$G"
done; done
for c in 16 17; do for b in e852 bal2; do
  echo "== G1 2^24 $b --window-bits $c"; /tmp/bench_$b --min 24 --max 24 $A --reps 5 --check-max 0 --window-bits $c 2>&1 | grep -E "$G"
done; done
echo "== G1 2^26 bal2"; /tmp/bench_bal2 --min 26 --max 26 $A --reps 3 --check-max 0 2>&1 | grep -E "$G"
echo "== G1 2^26 bal2 --window-bits 17"; /tmp/bench_bal2 --min 26 --max 26 $A --reps 3 --check-max 0 --window-bits 17 2>&1 | grep -E "$G"
echo "== sweeps, bal2"
/tmp/bench_bal2 --min 23 --max 23 $A --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
/tmp/bench_bal2 --min 25 --max 25 $A --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
/tmp/bench_bal2 --min 25 --max 25 --g1-max 0 --g2-max 25 --no-streamed --no-affine --reps 3 --check-max 0 --window-sweep 2>&1 | grep -E "$G"
