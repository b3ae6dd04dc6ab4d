"""Differential check of kernels/field/fr.cuh's and mont52.cuh's arithmetic on the host (see fr_host_check.cpp)."""
import random
import subprocess
import sys

P = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
R = 1 << 256
RINV = pow(R, -1, P)


def edge_values():
    vals = [0, 1, 2, P - 1, P - 2, R % P, (R * R) % P, 1 << 254, (1 << 255) % P, P >> 1, (P >> 1) + 1]
    vals += [(1 << (32 * i)) - 1 for i in range(1, 8)]
    vals += [P - (1 << (32 * i)) for i in range(1, 8)]
    return [v % P for v in vals]


def main():
    binary = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    vals = edge_values() + [rng.randrange(P) for _ in range(400)]
    cases = []
    for a in vals:
        b = rng.choice(vals)
        cases.append(("add", a, b, (a + b) % P))
        cases.append(("sub", a, b, (a - b) % P))
        cases.append(("neg", a, 0, (-a) % P))
        cases.append(("mul", a, b, a * b * RINV % P))
        # The second operand of mul may be any 256-bit value.
        wide = rng.randrange(R)
        cases.append(("mul", a, wide, a * wide * RINV % P))
        # The FP64-pipe multiplication (mont52.cuh): any 256-bit first operand, b < P.
        cases.append(("mul52", a, b, a * b * RINV % P))
        cases.append(("mul52", wide, b, wide * b * RINV % P))
        cases.append(("sqr", a, 0, a * a * RINV % P))
        cases.append(("to_mont", a, 0, a * R % P))
        cases.append(("to_mont", wide, 0, wide * R % P))
        cases.append(("from_mont", a, 0, a * RINV % P))
    for a in vals[:60]:
        e = rng.randrange(R)
        # Montgomery pow: (a/R)^e * R
        cases.append(("pow", a, e, pow(a * RINV, e, P) * R % P))
        inv = 0 if a == 0 else pow(a * RINV, P - 2, P) * R % P
        cases.append(("inv", a, 0, inv))
    inp = "".join(f"{op} {a:064x} {b:064x}\n" for op, a, b, _ in cases)
    out = subprocess.run([binary], input=inp, capture_output=True, text=True, check=True).stdout.split()
    bad = 0
    for (op, a, b, want), got in zip(cases, out):
        if int(got, 16) != want:
            bad += 1
            if bad < 10:
                print(f"MISMATCH {op} a={a:064x} b={b:064x}\n  want {want:064x}\n  got  {got}")
    print(f"{len(cases)} cases, {bad} mismatches")
    sys.exit(1 if bad or len(out) != len(cases) else 0)


if __name__ == "__main__":
    main()
