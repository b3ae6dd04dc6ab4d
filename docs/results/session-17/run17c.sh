#!/bin/bash
cd "$(dirname "$0")"
gunzip -c bench_sort4.gz > /tmp/b; chmod +x /tmp/b
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
G='^\| G|panick|mismatch|rror'
echo "== checks: G1 2^26 (two-pass, 4096 bins), G1 2^24 tile 256, G2 2^23, G1 2^25 streamed"
/tmp/b --min 26 --max 26 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 26 2>&1 | grep -E "$G" | cut -c1-300
/tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 24 --sort-tile-threads 256 2>&1 | grep -E "$G" | cut -c1-300
/tmp/b --min 23 --max 23 --g1-max 0 --g2-max 23 --reps 1 --no-streamed --no-affine --check-max 23 2>&1 | grep -E "$G" | cut -c1-300
/tmp/b --min 25 --max 25 --g2-max 0 --reps 1 --no-affine --check-max 25 2>&1 | grep -E "$G" | cut -c1-300
A="--min 24 --max 24 --g2-max 0 --reps 5 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G1 r$r t1024"; /tmp/b $A 2>&1 | grep -E "$G"
  echo "== G1 r$r t256"; /tmp/b $A --sort-tile-threads 256 2>&1 | grep -E "$G"
  echo "== G1 r$r one"; /tmp/b $A --one-pass-sort 2>&1 | grep -E "$G"
done
B="--min 24 --max 24 --g1-max 0 --g2-max 24 --reps 5 --no-streamed --no-affine --check-max 0"
echo "== G2 t1024"; /tmp/b $B 2>&1 | grep -E "$G"
echo "== G2 t256"; /tmp/b $B --sort-tile-threads 256 2>&1 | grep -E "$G"
C="--min 26 --max 26 --g2-max 0 --reps 3 --no-streamed --no-affine --check-max 0"
for r in 1 2; do
  echo "== G1 2^26 r$r two"; /tmp/b $C 2>&1 | grep -E "$G"
  echo "== G1 2^26 r$r one"; /tmp/b $C --one-pass-sort 2>&1 | grep -E "$G"
done
echo "== ncu sort 2^24 t1024 then t256"
for t in 1024 256; do
/usr/local/cuda/bin/ncu --clock-control none --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum -k regex:'msm_sort' -c 2 /tmp/b --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 0 --sort-tile-threads $t 2>&1 | grep -E '^"[0-9]' | cut -d, -f5,12- | cut -c1-200
done
