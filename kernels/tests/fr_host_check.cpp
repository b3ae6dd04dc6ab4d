// Host check of kernels/field/fr.cuh and mont52.cuh: the same arithmetic, with the PTX carry instructions
// emulated in C, driven by fr_host_check.py (which holds the big-integer reference).
//
//   g++ -O2 -std=c++17 -I kernels kernels/tests/fr_host_check.cpp -o /tmp/fr_host_check
//   python3 kernels/tests/fr_host_check.py /tmp/fr_host_check
//
// Input lines: "<op> <a> <b>" with 64 hex digits per operand (big-endian); output: one 64-digit
// result per line.
#include <cstdio>
#include <cstring>
#include <string>

#include "field/fr.cuh"
#include "field/mont52.cuh"

static fr_t parse(const char* hex) {
    fr_t r;
    for (int i = 0; i < 8; i++) {
        char buf[9];
        memcpy(buf, hex + 8 * (7 - i), 8);
        buf[8] = 0;
        r.l[i] = (uint32_t)strtoul(buf, nullptr, 16);
    }
    return r;
}

int main() {
    char op[16], a_hex[65], b_hex[65];
    while (scanf("%15s %64s %64s", op, a_hex, b_hex) == 3) {
        fr_t a = parse(a_hex), b = parse(b_hex), r;
        std::string o = op;
        if (o == "add") r = fr_add(a, b);
        else if (o == "sub") r = fr_sub(a, b);
        else if (o == "neg") r = fr_neg(a);
        else if (o == "mul") r = fr_mul(a, b);
        else if (o == "mul52") r = fr_mul52(a, fr52::multiplier(b));
        else if (o == "sqr") r = fr_sqr(a);
        else if (o == "inv") r = fr_inv(a);
        else if (o == "pow") r = fr_pow(a, b.l);
        else if (o == "to_mont") r = fr_to_mont(a);
        else if (o == "from_mont") r = fr_from_mont(a);
        else { fprintf(stderr, "unknown op %s\n", op); return 2; }
        for (int i = 7; i >= 0; i--) printf("%08x", r.l[i]);
        printf("\n");
    }
    return 0;
}
