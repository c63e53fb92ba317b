#!/usr/bin/env python3
"""Error rates of client.exponential_backoff's `gaps_grow` rule (issue 12).

The rule (src/families/client/judge.rs, `exponential`): with the gaps a client
leaves after scripted 429s without Retry-After, the later half must sum to at
least `growth` x the earlier half. This simulates synthetic clients and prints
how often each kind passes: violators (no growth) should pass <= 0.1 %,
conformers (real backoff) should fail <= 0.1 %. It does not today: see the
"Known limit" note under client.exponential_backoff in docs/checks.md.

    python3 docs/sim/exponential_backoff.py [N=100000] [GAPS=8]
"""
import random
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
GAPS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
random.seed(1)


def gaps_grow(g, growth=2.0):
    h = len(g) // 2
    early, late = sum(g[:h]), sum(g[h:])
    return (late / early if early > 0 else float("inf")) >= growth


def decorrelated():
    s, out = 0.01, []
    for _ in range(GAPS):
        s = min(10.0, random.uniform(0.01, s * 3))
        out.append(s)
    return out


VIOLATORS = {
    "constant 100 ms (5 % noise)": lambda: [0.1 * (1 + random.gauss(0, 0.05)) for _ in range(GAPS)],
    "uniform 0.5-1.0 s": lambda: [random.uniform(0.5, 1.0) for _ in range(GAPS)],
    "uniform 0-1 s (wait_random)": lambda: [random.uniform(0, 1.0) for _ in range(GAPS)],
}
CONFORMERS = {
    "full jitter, base 10 ms, x2": lambda: [random.uniform(0, 0.01 * 2**i) for i in range(GAPS)],
    "full jitter capped at 0.5 s": lambda: [random.uniform(0, min(0.5, 0.01 * 2**i)) for i in range(GAPS)],
    "equal jitter, x2": lambda: [0.01 * 2**i * (0.5 + random.uniform(0, 0.5)) for i in range(GAPS)],
    "decorrelated jitter (x3, cap 10 s)": decorrelated,
}

print(f"{N} clients each, {GAPS} gaps, growth 2")
for name, gen in VIOLATORS.items():
    p = sum(gaps_grow(gen()) for _ in range(N)) / N
    print(f"  violator  {name:36s} passes {100 * p:6.3f} %")
for name, gen in CONFORMERS.items():
    p = 1 - sum(gaps_grow(gen()) for _ in range(N)) / N
    print(f"  conformer {name:36s} fails  {100 * p:6.3f} %")
