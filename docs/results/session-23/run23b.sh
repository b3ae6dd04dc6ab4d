#!/bin/bash
# session 23 round 2 (device tool, carry ["target/device"]): the MSM table's rows, G1 and G2 2^20
# to 2^26 (bench-msm-*.json beside this script), with the device pack's bench_msm (HEAD,
# 537bf4d: the chain-start marker), and the 2^28 NTT with the full table (--config 2,9,9,1,28)
# against the default (2,9,9,1,27: none at 2^28), whose lines round 1's output lost. Everything
# this prints is also in $OUT/run23b.txt.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run23b.txt) 2>&1
S=$(date +%s)
gunzip -c ${MSM_BIN:-target/device/bench_msm.gz} > /tmp/b; echo "bench_msm: ${MSM_BIN:-target/device/bench_msm.gz}"; gunzip -c target/device/bench_ntt.gz > /tmp/n; chmod +x /tmp/b /tmp/n
for c in 2,9,9,1,28 2,9,9,1,27; do
  echo "== bench_ntt --config $c t=$(( $(date +%s)-S ))"
  timeout 120 /tmp/n --min 28 --max 28 --no-sweep --no-check --config $c 2>&1 | grep -E '^\| 28 \|'
done
run() { name=$1; shift; echo "== bench_msm $*" > $OUT/$name.log; timeout 240 /tmp/b "$@" --out $OUT/$name.json >> $OUT/$name.log 2>&1; echo "$name rc=$? t=$(( $(date +%s)-S ))"; grep -E '^\| G|panick|mismatch|rror' $OUT/$name.log | cut -c1-160; }
run bench-msm-g1-20-24 --min 20 --max 24 --g2-max 0 --reps 3 --check-max 22 --window-sweep
run bench-msm-g1-25-26 --min 25 --max 26 --g2-max 0 --reps 3 --check-max 0
run bench-msm-g2-20-24 --min 20 --max 24 --g1-max 0 --g2-max 24 --reps 3 --check-max 22 --window-sweep
run bench-msm-g2-25-26 --min 25 --max 26 --g1-max 0 --g2-max 26 --reps 3 --check-max 0
echo "done t=$(( $(date +%s)-S ))"
