#!/usr/bin/env python3
"""tools/npy2pb.py IN.npy NAME OUT.pb: convert an f32 or i64 .npy array to a serialized
onnx.TensorProto named NAME (the format of ONNX test data and `aicc run --input x=FILE.pb`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402

if len(sys.argv) != 4:
    sys.exit('usage: npy2pb.py IN.npy NAME OUT.pb')
shape, vals = npyio.read_npy(sys.argv[1])
dtype = '<i8' if vals and isinstance(vals[0], int) else '<f4'
npyio.write_pb(sys.argv[3], sys.argv[2], list(shape), vals, dtype)
