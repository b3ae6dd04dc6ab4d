#!/bin/bash
# session 30 round 2 (device tool, carry ["target/exp30"]): `fuse` (sm_90 only: 7bfd3cf with
# the second pass's batched loads as in sortb, the first pass's claims two per thread with no
# atomic past the last bin, which sortb put on one address, and the last chunk's batch-affine
# sums fused with the bucket reduction's first level, msm_affine_reduce) against `base` (the
# sm_90 build of 7bfd3cf), and `fuse --unfused-reduce` (the sort changes alone). blst checks
# of fuse first (G1 2^20-2^23 and G2 2^20-2^21 in one chunk; G1 2^22 in four chunks, whose
# last chunk's fused level adds into earlier chunks' buckets; G1 2^24 with 8-bit scalars;
# G1 2^21 streamed), then alternately. One archive comes back.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/r30b
exec > >(tee /tmp/r30b/run30b.txt) 2>&1
S=$(date +%s)
for b in base fuse; do gunzip -c target/exp30/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"c",$4,"res",$7,"pinned",$11,"chk",$15,"stages",$17}' ; }
echo "== fuse checked against blst t=$(( $(date +%s)-S ))"
timeout 150 /tmp/msm_fuse --min 20 --max 23 --g2-max 21 $A --reps 1 --check-max 23 2>&1 | row
timeout 60 /tmp/msm_fuse --min 22 --max 22 --g2-max 0 $A --reps 1 --check-max 22 --resident-chunk 1048576 2>&1 | row
timeout 120 /tmp/msm_fuse --min 24 --max 24 --g2-max 0 $A --reps 1 --check-max 24 --scalar-bits 8 2>&1 | row
timeout 60 /tmp/msm_fuse --min 21 --max 21 --g2-max 0 --no-affine --reps 1 --check-max 21 2>&1 | row
run() { # name binary args...
  local n=$1 b=$2; shift 2
  echo "== $n t=$(( $(date +%s)-S ))"
  timeout 90 /tmp/msm_$b "$@" $A --check-max 0 2>&1 | row
}
for round in 1 2; do
  run "G1 2^24 base ($round)" base --min 24 --max 24 --g2-max 0 --reps 5
  run "G1 2^24 fuse ($round)" fuse --min 24 --max 24 --g2-max 0 --reps 5
  run "G1 2^24 fuse unfused ($round)" fuse --min 24 --max 24 --g2-max 0 --reps 5 --unfused-reduce
done
run "G1 2^26 base" base --min 26 --max 26 --g2-max 0 --reps 3
run "G1 2^26 fuse" fuse --min 26 --max 26 --g2-max 0 --reps 3
run "G1 2^26 fuse unfused" fuse --min 26 --max 26 --g2-max 0 --reps 3 --unfused-reduce
run "G2 2^24 base" base --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3
run "G2 2^24 fuse" fuse --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3
run "G2 2^24 fuse unfused" fuse --min 24 --max 24 --g1-max 0 --g2-max 24 --reps 3 --unfused-reduce
echo "done t=$(( $(date +%s)-S ))"
tar czf $OUT/run30b.tgz -C /tmp r30b
