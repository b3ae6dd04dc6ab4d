#!/bin/bash
# session 24 round 1 (device tool, carry ["target/exp24"]): `base` (5bd7dbe, SASS for sm_90 only)
# against `pad` (the same, with CUZK_SUMS_SMEM bytes of dynamic shared memory on every launch of
# msm_affine_sums_g1, so that at most three of its blocks fit an SM and the other lane's pairs
# and inversion-tree blocks can run beside them: their registers, 126 x 128 a block, filled the
# register file at four blocks). pad=0 is the base's launch. G1 only; --no-streamed --no-affine.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run24a.txt) 2>&1
S=$(date +%s)
for b in base pad; do gunzip -c target/exp24/bench_msm_$b.gz > /tmp/msm_$b; chmod +x /tmp/msm_$b; done
G='panick|mismatch|rror'
A="--no-streamed --no-affine"
row() { grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,"res",$7,"one",$10,"stages",$17}' ; }
echo "== pad 65536 checked against blst: G1 2^20-2^22 t=$(( $(date +%s)-S ))"
CUZK_SUMS_SMEM=65536 timeout 120 /tmp/msm_pad --min 20 --max 22 --g2-max 0 $A --reps 1 --check-max 22 2>&1 | grep -E "^\| G|$G" | awk -F'|' '{print $2,$3,$7,$15}'
for round in 1 2; do
  for v in base:0 pad:0 pad:57344 pad:65536 pad:73728 pad:98304; do b=${v%%:*}; p=${v##*:}
    echo "== G1 2^24 $b pad=$p ($round) t=$(( $(date +%s)-S ))"
    CUZK_SUMS_SMEM=$p timeout 100 /tmp/msm_$b --min 24 --max 24 --g2-max 0 $A --reps 5 --check-max 0 2>&1 | row
  done
done
for v in base:0 pad:65536; do b=${v%%:*}; p=${v##*:}
  echo "== G1 2^26 $b pad=$p t=$(( $(date +%s)-S ))"
  CUZK_SUMS_SMEM=$p timeout 100 /tmp/msm_$b --min 26 --max 26 --g2-max 0 $A --reps 3 --check-max 0 2>&1 | row
done
echo "done t=$(( $(date +%s)-S ))"
