#!/bin/bash
# session 19 round 2: ncu of the buckets stage and the bucket reduction at G1 2^24 (head, 6ba0b9a).
cd "$(dirname "$0")/../../../target/exp18"
gunzip -c bench_head.gz > /tmp/bench_head; chmod +x /tmp/bench_head
/usr/local/cuda/bin/ncu --clock-control none --csv --print-units base --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.per_cycle_active,sm__inst_executed.sum,smsp__inst_executed_pipe_imad.sum,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum -k regex:'msm_reduce_g1|msm_affine_buckets_g1' -c 40 /tmp/bench_head --min 24 --max 24 --g2-max 0 --reps 1 --no-streamed --no-affine --check-max 0 2>&1 | grep -E '^"[0-9]' | cut -d, -f5,12- | cut -c1-220
