"""Derive the ziggurat tables NumPy's Generator.standard_normal uses, by
probing NumPy itself: set a PCG64 state whose next output is chosen, draw one
normal, and read the table entry off the result (wi) or off how many words the
draw consumed (ki). fi is exp(-x^2/2) at the layer edge, x = wi * 2^52."""
import numpy as np
from decimal import Decimal, getcontext

M = 0x2360ED051FC65DA44385DF649FCCF645
MASK128 = (1 << 128) - 1
MINV = pow(M, -1, 1 << 128)
INC = 1

def rotl(x, k):
    k &= 63
    return ((x << k) | (x >> (64 - k))) & 0xFFFFFFFFFFFFFFFF if k else x

def state_before(out):
    rot = 5
    hi = (rot << 58) | 0x1234567
    lo = rotl(out, rot) ^ hi
    after = (hi << 64) | lo
    return ((after - INC) * MINV) & MASK128, after

bg = np.random.PCG64(0)
g = np.random.Generator(bg)

def draw(out):
    before, after = state_before(out)
    bg.state = {"bit_generator": "PCG64", "state": {"state": before, "inc": INC}, "has_uint32": 0, "uinteger": 0}
    x = g.standard_normal()
    one_word = bg.state["state"]["state"] == after
    return x, one_word

wi = []
ki = []
for idx in range(256):
    x, _ = draw(idx | (1 << 9))
    wi.append(float(x))
    lo, hi = 0, 1 << 52  # ki in [lo, hi]: rabs < ki returns after one word
    while lo < hi:
        mid = (lo + hi + 1) // 2  # is rabs = mid-1 < ki ?
        _, one = draw(idx | ((mid - 1) << 9))
        if one:
            lo = mid
        else:
            hi = mid - 1
    ki.append(lo)
getcontext().prec = 40
fi = [1.0] + [float((-(Decimal(w * 2.0**52) ** 2) / 2).exp()) for w in wi[1:]]
print("ki", [hex(k) for k in ki[:4]], hex(ki[255]))
print("wi", wi[:3], wi[255])
print("fi", fi[1], fi[2], fi[254], fi[255])
with open("/tmp/zig/tables.txt", "w") as f:
    for name, vals in (("KI", ki), ("WI", wi), ("FI", fi)):
        f.write(name + "\n")
        for v in vals:
            f.write((hex(v) if name == "KI" else repr(v)) + "\n")
