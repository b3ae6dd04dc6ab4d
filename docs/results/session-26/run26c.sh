#!/bin/bash
# session 26 round 3 (device tool, carry ["target/exp25"]): why a small level of the bucket
# reduction takes 0.3-0.4 ms: ncu's launch, scheduler and warp-state sections on the `base`
# build's (aaee805, sm_90) msm_reduce_g1 launches 1, 4, 5 and 6 of G1 2^24 (the first level and
# the last three, two to 28 blocks), full text in ncu-reduce-g1.txt.
cd "$(dirname "$0")/../../.."
exec > >(tee $OUT/run26c.txt) 2>&1
gunzip -c target/exp25/bench_msm_base.gz > /tmp/msm_base; chmod +x /tmp/msm_base
for skip in 0 3; do
  c=$([ $skip = 0 ] && echo 1 || echo 3)
  timeout 200 ncu --clock-control none -k regex:'^msm_reduce_g1$' --launch-skip $skip --launch-count $c \
    --section LaunchStats --section SchedulerStats --section WarpStateStats --section SpeedOfLight \
    --section Occupancy --metrics smsp__cycles_active.avg,sm__cycles_elapsed.avg,smsp__inst_executed.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum \
    /tmp/msm_base --min 24 --max 24 --g2-max 0 --no-streamed --no-affine --reps 1 --check-max 0 >> $OUT/ncu-reduce-g1.txt 2>&1
  echo "ncu rc=$?"
done
grep -E 'msm_reduce_g1 \(|Duration|Registers Per|Grid Size|Block Size|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Executed Ipc A|Stall|inst_executed|cycles_active|cycles_elapsed|local_op|SM Frequency|Compute \(SM\) Throughput|Memory Throughput' $OUT/ncu-reduce-g1.txt | sed 's/  */ /g' | cut -c1-160
grep -E 'WRN|OPT' -A3 $OUT/ncu-reduce-g1.txt | sed 's/  */ /g' | cut -c1-300 | head -60
