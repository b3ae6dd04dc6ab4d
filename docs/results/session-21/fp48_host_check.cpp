// Session 21 host check of fp48.cuh: fp_mul48 against fp.cuh's fp_mul on 300,000 cases (limbs
// drawn from edge values and random, values just below p), both compiled for the host with the
// emulated carry instructions and mont52.cuh's exact emulation of __fma_rz. From the repository root:
//   g++ -O2 -std=c++17 -I kernels -I docs/results/session-21 docs/results/session-21/fp48_host_check.cpp -o /tmp/fp48_check && /tmp/fp48_check
#include <cstdio>
#include <random>
#include "fp48.cuh"
static const uint32_t P[12]={0xffffaaabu,0xb9feffffu,0xb153ffffu,0x1eabfffeu,0xf6b0f624u,0x6730d2a0u,0xf38512bfu,0x64774b84u,0x434bacd7u,0x4b1ba7b6u,0x397fe69au,0x1a0111eau};
int main(){
  std::mt19937_64 rng(1);
  const uint32_t edge[]={0,1,2,0xffffffffu,0xfffffffeu,0x80000000u,0xffffu,0xffff0000u};
  long bad=0,n=0;
  for(int t=0;t<300000;t++){
    fp_t a,b;
    for(int i=0;i<12;i++){
      int mode=t%4;
      a.l[i]= mode==0? (uint32_t)rng() : edge[rng()%8];
      b.l[i]= mode==1? edge[rng()%8] : (uint32_t)rng();
    }
    if(t%7==0){ for(int i=0;i<12;i++) a.l[i]=P[i]; a.l[0]-=1+(rng()%3); }
    if(t%11==0){ for(int i=0;i<12;i++) b.l[i]=P[i]; b.l[0]-=1; }
    a.l[11]&=0x1fffffffu; b.l[11]&=0x1fffffffu;
    // canonicalise: a, b < 2^381; reduce once or more
    for(int r=0;r<4;r++){ a=fp_reduce_once(a); b=fp_reduce_once(b);}
    fp_t r1=fp_mul(a,b), r2=fp_mul48(a,b);
    n++; if(!fp_eq(r1,r2)){ if(bad<5){printf("mismatch t=%d\n",t);} bad++; }
  }
  printf("%ld/%ld mismatches\n",bad,n); return bad!=0;
}
