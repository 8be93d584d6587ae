"""Writes cases.json: two-sample KS tests with scipy's statistic and p-value (method auto).

Small samples are written out; large ones are described by a generator that Rust rebuilds
exactly: value i (from 0) = ((i * mul + add) % modulus) / modulus * scale + shift.
"""
import json
import sys

import numpy as np
from scipy import stats


def gen(n, mul, add, modulus, scale, shift):
    return {"n": n, "mul": mul, "add": add, "modulus": modulus, "scale": scale, "shift": shift}


def build(g):
    return [((i * g["mul"] + g["add"]) % g["modulus"]) / g["modulus"] * g["scale"] + g["shift"]
            for i in range(g["n"])]


cases = [
    ("ties_unequal", [1, 2, 2, 3, 3, 3, 5], [2, 2, 3, 4, 4, 4, 5, 5, 6, 6, 7]),
    ("all_ties_same", [4, 4, 4, 4], [4, 4, 4]),
    ("identical", [0.5, 1.5, 2.5, 3.5, 4.5], [0.5, 1.5, 2.5, 3.5, 4.5]),
    ("one_each_apart", [1.0], [2.0]),
    ("one_each_equal", [1.0], [1.0]),
    ("one_against_many", [5.0], [1, 2, 3, 4, 6, 7, 8, 9, 10, 11.5, 12]),
    ("separated", list(range(40)), [100 + i for i in range(60)]),
    ("equal_sizes", gen(50, 37, 3, 101, 10.0, 0.0), gen(50, 53, 11, 103, 10.0, 1.2)),
    ("unequal_gcd", gen(300, 71, 5, 307, 1.0, 0.0), gen(170, 89, 2, 173, 1.0, 0.08)),
    ("coprime_sizes", gen(97, 13, 1, 211, 5.0, 0.0), gen(64, 29, 7, 199, 5.0, 0.3)),
    ("exact_limit", gen(10000, 7919, 1, 10007, 1.0, 0.0), gen(9000, 6151, 3, 9001, 1.0, 0.004)),
    ("exact_small_p", gen(2000, 7919, 1, 10007, 1.0, 0.0), gen(1500, 6151, 3, 9001, 1.0, 0.12)),
    ("asymp_pelz_good", gen(12000, 7919, 1, 12007, 1.0, 0.0), gen(400, 6151, 3, 401, 1.0, 0.05)),
    ("asymp_durbin_large", gen(10500, 7919, 1, 10501, 1.0, 0.0), gen(10400, 6151, 3, 10399, 1.0, 0.004)),
    ("asymp_smirnov_tail", gen(11000, 7919, 1, 11003, 1.0, 0.0), gen(11000, 6151, 3, 11003, 1.0, 0.03)),
    ("asymp_tail_zero", gen(12000, 7919, 1, 12007, 1.0, 0.0), gen(12000, 6151, 3, 12011, 1.0, 0.4)),
    ("asymp_small_k", gen(10001, 7919, 1, 10007, 1.0, 0.0), gen(60, 37, 3, 61, 1.0, 0.1)),
    ("asymp_small_k_mid", gen(10001, 7919, 1, 10007, 1.0, 0.0), gen(60, 37, 3, 61, 1.0, 0.2)),
    ("asymp_small_k_tail", gen(10001, 7919, 1, 10007, 1.0, 0.0), gen(60, 37, 3, 61, 1.0, 0.35)),
    ("asymp_small_k_one", gen(10001, 7919, 1, 10007, 1.0, 0.0), gen(60, 37, 3, 61, 1.0, 0.01)),
]

out = []
for name, a, b in cases:
    xa = build(a) if isinstance(a, dict) else [float(v) for v in a]
    xb = build(b) if isinstance(b, dict) else [float(v) for v in b]
    r = stats.ks_2samp(np.array(xa), np.array(xb))
    out.append({"name": name, "a": a, "b": b,
                "statistic": float(r.statistic), "pvalue": float(r.pvalue)})
json.dump({"scipy": __import__("scipy").__version__, "cases": out}, sys.stdout, indent=1)
sys.stdout.write("\n")
