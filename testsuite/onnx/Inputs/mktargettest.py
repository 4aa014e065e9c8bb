"""testsuite/onnx/Inputs/mktargettest.py DIR: ONNX backend-test folders for `aicc onnx-test` on
every target (plain Python, no onnx package; encoders from mkonnx.py):
  DIR/cast_exact: Cast x:f32[6] to FLOAT16 and to FLOAT8E4M3FN, and QuantizeLinear to
    FLOAT8E4M3FN (scale 1), on values where narrowing x first would change the answer:
    -0.0015 -> -2^-9 in E4M3 (bf16 keeps it, but a wrong rounding path gives -0), 2^-10 * 1.0001
    -> 2^-9, 1 + 2^-10 + 2^-12 -> 1 in E4M3 but 1 + 2^-10 in f16 (through bf16: 1), 300 -> 288,
    -1e-7 -> -0, 65519 -> 448 (E4M3 saturates) and 65504 in f16.  Expected values by hand
    (OCP FP8 E4M3FN: bias 7, 3 mantissa bits, max 448; IEEE binary16).
  DIR/relu_bf16: Relu of values bf16 cannot hold (1 + 2^-10, ...): exact on the reference,
    within 8 u of bf16 on the GPU and TPU targets.
  DIR/relu_wrong: the same model with an expected value 5% off: fails everywhere, and the FAIL
    line names the tolerance."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkonnx import attr_int, model, msg, node, s, tensor, value_info, vi  # noqa: E402

F32, F16, E4M3 = 1, 10, 17
X = [-0.0015, 2.0 ** -10 * 1.0001, 1 + 2.0 ** -10 + 2.0 ** -12, 300.0, -1e-7, 65519.0]
E4M3_CODES = [0x81, 0x01, 0x38, 0x79, 0x80, 0x7E]


def raw_tensor(name, dims, dtype, raw):
    return b''.join(vi(1, d) for d in dims) + vi(2, dtype) + s(8, name) + s(9, raw)


def f32(name, vals):
    return raw_tensor(name, [len(vals)], F32, struct.pack('<%df' % len(vals), *vals))


def write(d, m, ins, outs):
    os.makedirs(os.path.join(d, 'test_data_set_0'), exist_ok=True)
    with open(os.path.join(d, 'model.onnx'), 'wb') as f:
        f.write(m)
    for k, t in enumerate(ins):
        with open(os.path.join(d, 'test_data_set_0', 'input_%d.pb' % k), 'wb') as f:
            f.write(t)
    for k, t in enumerate(outs):
        with open(os.path.join(d, 'test_data_set_0', 'output_%d.pb' % k), 'wb') as f:
            f.write(t)


def main():
    out = sys.argv[1]
    n = len(X)
    nodes = [node('Cast', ['x'], ['h'], 'to_f16', [attr_int('to', F16)]),
             node('Cast', ['x'], ['e'], 'to_e4m3', [attr_int('to', E4M3)]),
             node('QuantizeLinear', ['x', 'scale', 'zero'], ['q'], 'q_e4m3')]
    inits = [raw_tensor('scale', [], F32, struct.pack('<f', 1.0)), raw_tensor('zero', [], E4M3, b'\0')]
    m = model(nodes, [value_info('x', [n])],
              [value_info('h', [n], F16), value_info('e', [n], E4M3), value_info('q', [n], E4M3)], inits, opset=19)
    want_h = raw_tensor('h', [n], F16, struct.pack('<%de' % n, *[struct.unpack('<e', struct.pack('<e', v))[0] for v in X]))
    codes = bytes(E4M3_CODES)
    write(os.path.join(out, 'cast_exact'), m, [f32('x', X)],
          [want_h, raw_tensor('e', [n], E4M3, codes), raw_tensor('q', [n], E4M3, codes)])
    r = [1 + 2.0 ** -10, 3 + 2.0 ** -7, -2.0, 0.30078125 + 2.0 ** -12]
    relu = [max(v, 0.0) for v in r]
    m = model([node('Relu', ['x'], ['y'], 'relu')], [value_info('x', [len(r)])], [value_info('y', [len(r)])])
    write(os.path.join(out, 'relu_bf16'), m, [f32('x', r)], [f32('y', relu)])
    write(os.path.join(out, 'relu_wrong'), m, [f32('x', r)], [f32('y', [v * 1.05 for v in relu])])


if __name__ == '__main__':
    main()
