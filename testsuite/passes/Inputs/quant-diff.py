"""Differential check of place-precision: the interpreter's result of the quantized graph is
within the estimated relative error (est_rel_err of the quantized MatMul) of the f32 result.
usage: quant-diff.py REF_DIR QUANT_DIR QUANT.aig OUTPUT NODE   (normwise relative error)"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools'))
from npyio import read_npy  # noqa: E402

ref_dir, q_dir, q_aig, out, node = sys.argv[1:6]
ref = read_npy(os.path.join(ref_dir, out + '.npy'))[1]
q = read_npy(os.path.join(q_dir, out + '.npy'))[1]
err = math.sqrt(sum((a - b) ** 2 for a, b in zip(q, ref)) / sum(a * a for a in ref))
line = [ln for ln in open(q_aig) if re.match(r'\s*%s(\.\d+)? = MatMul' % node, ln)][0]
prec = re.search(r'precision="([^"]+)"', line).group(1)
est = float(re.search(r'est_rel_err=([0-9.e+-]+)', line).group(1))
ok = 0 < err <= est
print('%s: %s relative error %.3g, estimated %.3g: %s' % (node, prec, err, est, 'ok' if ok else 'FAIL'))
sys.exit(0 if ok else 1)
