#!/usr/bin/env python3
"""tools/gen_quantize_tests.py: regenerate the golden tests testsuite/quantize/gen_*.test.

The expectations come from the format definitions in ../shared/reference/numerics.md, never
from aicc's own code: each element format is listed below as (exponent bits, mantissa bits,
bias, specials), its grid is enumerated with exact rationals (fractions.Fraction), and rounding
is "the nearest grid value, ties to the even code" (numerics.md §2).  MX blocks follow §3 (FLOOR
and RCEIL, clamp at 2^-127, NaN blocks 0xFF, MXINT8 clamped to +-127) with exact arithmetic;
NVFP4 follows the Transformer Engine float32 recipe of §4, each float32 operation emulated as
one correctly rounded operation in double followed by a cast to float32 (exact for products,
and innocuous double rounding for quotients since 53 >= 2*24+2).

Usage: python3 tools/gen_quantize_tests.py [OUTDIR]   (default testsuite/quantize)
Reviewers read the diff of the generated files.
"""
import ctypes
import math
import os
import random
import struct
import sys
from fractions import Fraction as Fr

FLT_MAX = struct.unpack('<f', b'\xff\xff\x7f\x7f')[0]


def f32(x):
    """x rounded to float32 (RNE) and back to a Python float; overflow gives inf."""
    return ctypes.c_float(x).value


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def bits_f32(u):
    return struct.unpack('<f', struct.pack('<I', u))[0]


def c_hex(v):
    """What glibc printf("%a", (double)v) prints for a float32 v (aicc prints NaN as nan)."""
    if v != v:
        return 'nan'
    if math.isinf(v):
        return '-inf' if v < 0 else 'inf'
    sign = '-' if math.copysign(1.0, v) < 0 else ''
    v = abs(v)
    if v == 0:
        return sign + '0x0p+0'
    m, e = math.frexp(v)
    frac = int((m * 2 - 1) * (1 << 52))
    digits = ('%013x' % frac).rstrip('0')
    exp = e - 1
    return '%s0x1%sp%s%d' % (sign, '.' + digits if digits else '', '+' if exp >= 0 else '-', abs(exp))


class Fmt:
    """A sign/exponent/mantissa float format with subnormals (numerics.md §1)."""

    def __init__(self, name, ebits, mbits, bias, kind):
        # kind: 'fn' (E4M3: only S.1111.111 is NaN), 'ieee' (all-ones exponent is Inf/NaN),
        #       'none' (FP6/FP4: every code is a number)
        self.name, self.E, self.M, self.bias, self.kind = name, ebits, mbits, bias, kind
        self.bits = 1 + ebits + mbits
        self.grid = []            # (value, code) for the non-negative finite codes, ascending
        for code in range(1 << (ebits + mbits)):
            e, m = code >> mbits, code & ((1 << mbits) - 1)
            if kind == 'ieee' and e == (1 << ebits) - 1:
                continue
            if kind == 'fn' and e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
                continue
            if e == 0:
                val = Fr(m, 1 << mbits) * Fr(2) ** (1 - bias)
            else:
                val = (1 + Fr(m, 1 << mbits)) * Fr(2) ** (e - bias)
            self.grid.append((val, code))
        self.max, self.maxcode = self.grid[-1]
        # the value the next code would have if the format went on (for non-saturating overflow)
        top_e = self.maxcode >> mbits
        self.beyond = self.max + Fr(2) ** (top_e - bias - mbits)
        self.signbit = 1 << (self.bits - 1)
        self.emax = top_e - bias

    def nan_code(self):
        return {'fn': 0x7F, 'ieee': (1 << (self.bits - 1)) - 1}.get(self.kind)

    def inf_code(self):
        return ((1 << self.E) - 1) << self.M if self.kind == 'ieee' else None

    def round(self, v, sat):
        """(code, value) of the float v: nearest grid point, ties to the even code."""
        if v != v:
            return self.nan_code(), math.nan
        neg = math.copysign(1.0, v) < 0
        s = self.signbit if neg else 0
        sgn = -1 if neg else 1
        if math.isinf(v):
            if sat or self.kind == 'none':
                return s | self.maxcode, sgn * float(self.max)
            if self.kind == 'ieee':
                return s | self.inf_code(), sgn * math.inf
            return self.nan_code(), math.nan
        a = abs(Fr(v))
        if a > self.max:
            if sat or self.kind == 'none':
                return s | self.maxcode, sgn * float(self.max)
            mid = (self.max + self.beyond) / 2
            if a < mid or (a == mid and self.maxcode % 2 == 0):
                return s | self.maxcode, sgn * float(self.max)
            if self.kind == 'ieee':
                return s | self.inf_code(), sgn * math.inf
            return self.nan_code(), math.nan
        lo, hi = 0, len(self.grid) - 1    # find the grid interval holding a
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.grid[mid][0] <= a:
                lo = mid
            else:
                hi = mid
        (va, ca), (vb, cb) = self.grid[lo], self.grid[hi]
        if a <= va:
            pick = (va, ca)
        elif a >= vb:
            pick = (vb, cb)
        elif a - va < vb - a:
            pick = (va, ca)
        elif a - va > vb - a:
            pick = (vb, cb)
        else:
            pick = (va, ca) if ca % 2 == 0 else (vb, cb)
        val = float(pick[0])
        return s | pick[1], (-val if neg else val)


E4M3 = Fmt('fp8_e4m3', 4, 3, 7, 'fn')
E5M2 = Fmt('fp8_e5m2', 5, 2, 15, 'ieee')
E3M2 = Fmt('fp6_e3m2', 3, 2, 3, 'none')
E2M3 = Fmt('fp6_e2m3', 2, 3, 1, 'none')
E2M1 = Fmt('fp4_e2m1', 2, 1, 1, 'none')
F16 = Fmt('fp16', 5, 10, 15, 'ieee')
BF16 = Fmt('bf16', 8, 7, 127, 'ieee')


def next_f32(v, up):
    """The float32 neighbour of a positive float32 v."""
    u = f32_bits(v)
    return bits_f32(u + 1 if up else u - 1)


def header(out, title, runs):
    out.append('# %s' % title)
    out.append('# Generated by tools/gen_quantize_tests.py from the format definitions in')
    out.append('# numerics.md; do not edit.  Inputs are the "# IN:" lines, one per output line.')
    for r in runs:
        out.append('# RUN: ' + r)


def emit_cases(out, cases, prefixes):
    """cases: [(input text, {prefix: expected line})]; writes IN and CHECK lines."""
    first = {p: True for p in prefixes}
    for text, exp in cases:
        out.append('# IN: %s' % text)
        for p in prefixes:
            out.append('# %s%s: %s' % (p, '' if first[p] else '-NEXT', exp[p]))
            first[p] = False


def run_line(fmt, what, prefix, extra=''):
    return ("sed -n 's/^# IN: //p' %%s | %%aicc quantize --format %s%s --print %s "
            "| FileCheck %%s --match-full-lines --check-prefix=%s" % (fmt, extra, what, prefix))


def scalar_inputs(f, stride=1):
    """Every grid point and every midpoint (with its float32 neighbours), both signs, and the
    overflow region and specials."""
    pts = []
    g = f.grid[::stride] if stride > 1 else f.grid
    if stride > 1:
        g = sorted(set(g + f.grid[:4] + f.grid[-4:] + f.grid[(1 << f.M) - 2:(1 << f.M) + 2]))
    for v, _ in g:
        pts.append(float(v))
    idx = {c: i for i, (_, c) in enumerate(f.grid)}
    for v, c in g:
        i = idx[c]
        if i + 1 < len(f.grid):
            mid = float((v + f.grid[i + 1][0]) / 2)
            pts += [next_f32(mid, False), mid, next_f32(mid, True)]
    mid = float((f.max + f.beyond) / 2)
    pts += [next_f32(mid, False), mid, next_f32(mid, True), float(f.beyond), FLT_MAX, math.inf]
    if f.kind != 'none':
        pts.append(math.nan)
    pts += [-p for p in pts if p == p]
    return pts


def gen_scalar(f, outdir, stride=1):
    pts = scalar_inputs(f, stride)
    sat_modes = [True] if f.kind == 'none' else [True, False]
    runs, prefixes = [], []
    for sat in sat_modes:
        tag = 'SAT' if sat else 'NOSAT'
        extra = '' if f.kind == 'none' else ' --saturate %s' % ('yes' if sat else 'no')
        runs.append(run_line(f.name, 'values', tag + 'V', extra))
        runs.append(run_line(f.name, 'codes', tag + 'C', extra))
        prefixes += [tag + 'V', tag + 'C']
    width = (f.bits + 3) // 4
    cases = []
    for p in pts:
        exp = {}
        for sat in sat_modes:
            tag = 'SAT' if sat else 'NOSAT'
            code, val = f.round(p, sat)
            exp[tag + 'V'] = c_hex(val)
            exp[tag + 'C'] = '0x%0*x' % (width, code)
        cases.append((c_hex(p), exp))
    out = []
    what = 'every grid point and midpoint' if stride == 1 else 'a sample of grid points and midpoints'
    header(out, '%s: %s, saturating and not (numerics.md §1, §2).' % (f.name, what), runs)
    emit_cases(out, cases, prefixes)
    write(outdir, 'gen_%s.test' % f.name, out)


# ---- MX blocks (numerics.md §3) ----
MX = [('mxfp8_e4m3', E4M3), ('mxfp8_e5m2', E5M2), ('mxfp6_e3m2', E3M2), ('mxfp6_e2m3', E2M3),
      ('mxfp4', E2M1), ('mxint8', None)]


def mx_block(elem, xs, rule):
    """(scale code, [(code, value)]) of one block."""
    if any(x != x or math.isinf(x) for x in xs):
        return 0xFF, [(0, math.nan) for _ in xs]
    amax = max(abs(Fr(x)) for x in xs)
    if amax == 0:
        k = -127
    else:
        emax = 0 if elem is None else elem.emax
        maxv = Fr(127, 64) if elem is None else elem.max
        e = 0                       # floor(log2(amax)) exactly
        while Fr(2) ** e > amax:
            e -= 1
        while Fr(2) ** (e + 1) <= amax:
            e += 1
        k = e - emax
        if rule == 'rceil':         # smallest k with 2^k >= amax / max_elem
            k = e - emax - 2
            while Fr(2) ** k < amax / maxv:
                k += 1
        k = max(k, -127)
        if k > 127:
            return 0xFF, [(0, math.nan) for _ in xs]
    X = Fr(2) ** k
    els = []
    for x in xs:
        if elem is None:
            q = round(Fr(x) / X * 64)          # Fraction rounding: half to even
            q = max(-127, min(127, q))
            els.append((q & 0xFF, float(Fr(q, 64) * X)))
        else:
            code, val = elem.round(float(Fr(x) / X) if Fr(x) / X <= Fr(FLT_MAX) else math.inf,
                                   True)
            # Fr(x)/X is exact as a double here: x is a float32 and X a power of two in range
            els.append((code, val if val == 0 else f32(float(Fr(val) * X))))
    return k + 127, els


def rand_f32(rng, scale_exp):
    m = rng.choice([rng.gauss(0, 1), rng.uniform(-2, 2), rng.choice([-1, 1]) * rng.random()])
    return f32(m * 2.0 ** scale_exp)


def gen_mx(outdir):
    rng = random.Random(20240601)
    for name, elem in MX:
        for rule in ('floor', 'rceil'):
            blocks = []
            for b in range(16):
                n = 32 if b % 6 else rng.randint(1, 31)
                se = rng.choice([0, 0, 3, -5, 20, -20, -120, -135, 100, 126])
                xs = [rand_f32(rng, se) for _ in range(n)]
                if b % 4 == 1:     # a spike: one large outlier
                    xs[rng.randrange(n)] = f32(rng.choice([-1, 1]) * 2.0 ** (se + rng.randint(3, 12)))
                if b % 8 == 3:     # ties and exact maxima
                    xs = [f32(rng.choice([-1, 1]) * rng.randint(0, 64) / 8.0) for _ in range(n)]
                if b == 5:
                    xs = [0.0] * n
                blocks.append(xs)
            # each block is its own run, so a short block is the (only, last) block of a tensor
            out = []
            header(out, '%s, %s scale rule: random blocks, spikes, ties, tiny and huge '
                   'magnitudes, short blocks (numerics.md §3).' % (name, rule), [])
            for i, xs in enumerate(blocks):
                sc, els = mx_block(elem, xs, rule)
                tag = 'B%d' % i
                extra = '' if rule == 'floor' else ' --scale-rule rceil'
                out.append("# RUN: sed -n 's/^# %s: //p' %%s | %%aicc quantize --format %s%s "
                           "--print values | FileCheck %%s --match-full-lines --check-prefix=%sV"
                           % (tag, name, extra, tag))
                out.append("# RUN: sed -n 's/^# %s: //p' %%s | %%aicc quantize --format %s%s "
                           "--print codes | FileCheck %%s --match-full-lines --check-prefix=%sC"
                           % (tag, name, extra, tag))
                out.append("# RUN: sed -n 's/^# %s: //p' %%s | %%aicc quantize --format %s%s "
                           "--print scales | FileCheck %%s --match-full-lines --check-prefix=%sS"
                           % (tag, name, extra, tag))
                out.append('# %s: %s' % (tag, ' '.join(c_hex(x) for x in xs)))
                out.append('# %sS: 0x%02x' % (tag, sc))
                w = 2 if elem is None or elem.bits > 4 else 1
                for j, (code, val) in enumerate(els):
                    nx = '' if j == 0 else '-NEXT'
                    out.append('# %sV%s: %s' % (tag, nx, c_hex(val)))
                for j, (code, val) in enumerate(els):
                    nx = '' if j == 0 else '-NEXT'
                    out.append('# %sC%s: 0x%0*x' % (tag, nx, w, code))
            write(outdir, 'gen_%s_%s.test' % (name, rule), out)


# ---- NVFP4 (numerics.md §4) ----
def nvfp4(xs, block=16):
    amax = max(abs(x) for x in xs)
    s_enc = f32(2688.0 / amax) if amax != 0 else 1.0
    s_enc = min(s_enc, FLT_MAX)
    if amax == 0 or s_enc == 0:
        s_enc = 1.0
    s_dec = f32(1.0 / s_enc)
    mult = f32(s_enc * f32(1.0 / 6.0))
    scales, els = [], []
    for i in range(0, len(xs), block):
        bl = xs[i:i + block]
        bamax = max(abs(x) for x in bl)
        sb, sbv = E4M3.round(f32(bamax * mult), True)
        den = f32(sbv * s_dec)
        enc_b = min(f32(1.0 / den) if den != 0 else math.inf, FLT_MAX)
        scales.append(sb)
        for x in bl:
            t = max(-6.0, min(6.0, f32(x * enc_b)))
            code, q = E2M1.round(t, True)
            els.append((code, f32(q * sbv * s_dec)))
    return s_dec, scales, els


def gen_nvfp4(outdir):
    rng = random.Random(7)
    out = []
    header(out, 'nvfp4: random tensors of 1-4 blocks, magnitudes 1e-10 to 1e10, tiny blocks next '
           'to large ones (scale underflow, subnormal scales), numerics.md §4.', [])
    for t in range(16):
        nb = rng.randint(1, 4)
        n = nb * 16 - (rng.randint(0, 15) if t % 3 == 0 else 0)
        se = rng.choice([0, -33, 33, -10, 10, 100, -100])
        xs = []
        for b in range((n + 15) // 16):
            bse = se - (rng.choice([0, 0, 8, 14, 20]) if b else 0)
            xs += [rand_f32(rng, bse) for _ in range(min(16, n - 16 * b))]
        s_dec, scales, els = nvfp4(xs)
        tag = 'T%d' % t
        for what, p in (('values', 'V'), ('codes', 'C'), ('scales', 'S')):
            out.append("# RUN: sed -n 's/^# %s: //p' %%s | %%aicc quantize --format nvfp4 --print %s "
                       "| FileCheck %%s --match-full-lines --check-prefix=%s%s" % (tag, what, tag, p))
        out.append('# %s: %s' % (tag, ' '.join(c_hex(x) for x in xs)))
        for j, s in enumerate(scales):
            out.append('# %sS%s: 0x%02x' % (tag, '' if j == 0 else '-NEXT', s))
        out.append('# %sS-NEXT: tensor %s' % (tag, c_hex(s_dec)))
        for j, (code, val) in enumerate(els):
            out.append('# %sV%s: %s' % (tag, '' if j == 0 else '-NEXT', c_hex(val)))
        for j, (code, val) in enumerate(els):
            out.append('# %sC%s: 0x%x' % (tag, '' if j == 0 else '-NEXT', code))
    write(outdir, 'gen_nvfp4.test', out)


def write(outdir, name, lines):
    with open(os.path.join(outdir, name), 'w') as fh:
        fh.write('\n'.join(lines) + '\n')


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else 'testsuite/quantize'
    os.makedirs(outdir, exist_ok=True)
    for f in (E4M3, E5M2, E3M2, E2M3, E2M1):
        gen_scalar(f, outdir)
    gen_scalar(F16, outdir, stride=97)
    gen_scalar(BF16, outdir, stride=89)
    gen_mx(outdir)
    gen_nvfp4(outdir)


if __name__ == '__main__':
    main()
