#!/bin/bash
# session 21 round 2 (device tool, carry ["target/device"]): the MSM table's G1 rows again with the
# device pack's bench_msm (HEAD with G1's bucket weights (7, 2)); G2's rows stay session 20's.
cd "$(dirname "$0")/../../.."
gunzip -c target/device/bench_msm.gz > /tmp/b; chmod +x /tmp/b
S=$(date +%s)
run() { name=$1; shift; echo "== bench_msm $*" > $OUT/$name.log; /tmp/b "$@" --out $OUT/$name.json >> $OUT/$name.log 2>&1; echo "$name rc=$? t=$(( $(date +%s)-S ))"; grep -E '^\| G|panick|mismatch|rror' $OUT/$name.log | cut -c1-160; }
run bench-msm-g1-20-24 --min 20 --max 24 --g2-max 0 --reps 3 --check-max 22 --window-sweep
run bench-msm-g1-25-26 --min 25 --max 26 --g2-max 0 --reps 3 --check-max 0
