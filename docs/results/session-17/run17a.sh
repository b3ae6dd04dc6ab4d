#!/bin/bash
# session 17 round 1: two-pass sort check + A/B, scratch sweep
cd "$(dirname "$0")"
gunzip -c bench_sort2.gz > /tmp/b; chmod +x /tmp/b
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
G='^\| G|panick|mismatch|rror'
echo "== check G1 2^24 two-pass, G2 2^23"
/tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 24 2>&1 | grep -E "$G" | cut -c1-300
/tmp/b --min 23 --max 23 --g1-max 0 --g2-max 23 --reps 1 --no-streamed --no-affine --check-max 23 2>&1 | grep -E "$G" | cut -c1-300
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G1 r$r two"; /tmp/b $A 2>&1 | grep -E "$G"
  echo "== G1 r$r one"; /tmp/b $A --one-pass-sort 2>&1 | grep -E "$G"
done
B="--min 24 --max 24 --g1-max 0 --g2-max 24 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G2 r$r two"; /tmp/b $B 2>&1 | grep -E "$G"
  echo "== G2 r$r one"; /tmp/b $B --one-pass-sort 2>&1 | grep -E "$G"
done
C="--min 26 --max 26 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0"
echo "== G1 2^26 two"; /tmp/b $C 2>&1 | grep -E "$G"
echo "== G1 2^26 one"; /tmp/b $C --one-pass-sort 2>&1 | grep -E "$G"
echo "== G1 2^26 two 28GiB"; /tmp/b $C --affine-scratch 30064771072 2>&1 | grep -E "$G"
echo "== G1 2^24 two 28GiB"; /tmp/b $A --affine-scratch 30064771072 2>&1 | grep -E "$G"
echo "== ncu sort 2^24"
/usr/local/cuda/bin/ncu --clock-control none --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum -k regex:'msm_sort|msm_scatter' -c 4 /tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 0 2>&1 | grep -E '^"[0-9]' | cut -d, -f5,12- | cut -c1-200
