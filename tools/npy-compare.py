#!/usr/bin/python3
"""tools/npy-compare.py GOT.npy WANT.npy [RTOL ATOL]: compare two .npy arrays of the same shape
elementwise, the way `aicc onnx-test` does: |got - want| <= ATOL + RTOL * |want| (defaults
1e-3 and 1e-5).  Prints one line "max_abs_err A, max_rel_err R, within tolerance: yes|no"
(R over the elements with |want| >= 1e-3, where a relative error means something) and exits 1
when the shapes differ or an element is out of tolerance.  Plain Python (no numpy)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402

if len(sys.argv) not in (3, 5):
    sys.exit('usage: npy-compare.py GOT.npy WANT.npy [RTOL ATOL]')
rtol, atol = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) == 5 else (1e-3, 1e-5)
gs, got = npyio.read_npy(sys.argv[1])
ws, want = npyio.read_npy(sys.argv[2])
if list(gs) != list(ws):
    sys.exit('shape %s differs from the expected %s' % (list(gs), list(ws)))
max_abs = max_rel = 0.0
ok = True
for g, w in zip(got, want):
    d = abs(g - w)
    max_abs = max(max_abs, d)
    if abs(w) >= 1e-3:
        max_rel = max(max_rel, d / abs(w))
    ok = ok and d <= atol + rtol * abs(w)
print('max_abs_err %.3g, max_rel_err %.3g, within tolerance: %s' % (max_abs, max_rel, 'yes' if ok else 'no'))
sys.exit(0 if ok else 1)
