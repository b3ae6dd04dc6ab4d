#!/bin/bash
# session 20 round 5 (device tool, carry ["target/exp18"]): the MSM table's four runs with bal3
# (balanced windows, the planner's weights refitted; SASS for sm_90 only), each with --out into $OUT.
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_bal3.gz > /tmp/b; chmod +x /tmp/b
S=$(date +%s)
run() { name=$1; shift; echo "== bench_msm $*" > $OUT/$name.log; /tmp/b "$@" --out $OUT/$name.json >> $OUT/$name.log 2>&1; echo "$name rc=$? t=$(( $(date +%s)-S ))"; grep -E '^\| G|panick|mismatch|rror' $OUT/$name.log | cut -c1-140; }
run bench-msm-g1-20-24 --min 20 --max 24 --g2-max 0 --reps 3 --check-max 22 --window-sweep
run bench-msm-g2-20-24 --min 20 --max 24 --g1-max 0 --g2-max 24 --reps 3 --check-max 22 --window-sweep
run bench-msm-g1-25-26 --min 25 --max 26 --g2-max 0 --reps 3 --check-max 0
run bench-msm-g2-25-26 --min 25 --max 26 --g1-max 0 --g2-max 26 --reps 3 --check-max 0
