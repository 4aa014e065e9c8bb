"""testsuite/onnx/Inputs/mkonnx.py KIND OUT.onnx: write a small hand-encoded ONNX model for the
importer's tests (plain Python, no onnx package).  KINDs: `unsupported` (a StringNormalizer node),
`external` (an initializer whose external data file is missing), `external-ok` (y = x + w, w in
weights.bin beside the model), `symbolic` (dim_param names
with dots, a Constant node, opset-11 Squeeze and Softmax forms), `cycle` (two nodes feeding
each other), `badraw` (raw_data of the wrong length), `reshape` (Reshape whose shape is a graph
input), `big` (y = x + w with a 5000-value initializer w), and tensor files: `shape.pb` (i64
[3, 4, 2]), `big-x.pb` (f32[1, 5000] of 0.5)."""
import struct
import sys


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fld(num, wire, payload):
    return varint(num << 3 | wire) + payload


def vi(num, n):
    return fld(num, 0, varint(n))


def s(num, text):
    b = text if isinstance(text, bytes) else text.encode()
    return fld(num, 2, varint(len(b)) + b)


def msg(num, body):
    return fld(num, 2, varint(len(body)) + body)


def tensor(name, dims, dtype=1, floats=None, ints=None, raw=None, external=None):
    b = b''.join(vi(1, d) for d in dims) + vi(2, dtype)
    if floats is not None:
        b += s(4, struct.pack('<%df' % len(floats), *floats))
    if ints is not None:
        b += s(7, b''.join(varint(i) for i in ints))
    b += s(8, name)
    if raw is not None:
        b += s(9, raw)
    if external is not None:
        b += b''.join(msg(13, s(1, k) + s(2, v)) for k, v in external) + vi(14, 1)
    return b


def value_info(name, dims, dtype=1):
    shape = b''.join(msg(1, vi(1, d) if isinstance(d, int) else s(2, d)) for d in dims)
    return s(1, name) + msg(2, msg(1, vi(1, dtype) + msg(2, shape)))


def attr_ints(name, v):
    return s(1, name) + s(8, b''.join(varint(i) for i in v)) + vi(20, 7)


def attr_int(name, v):
    return s(1, name) + vi(3, v) + vi(20, 2)


def attr_tensor(name, t):
    return s(1, name) + msg(5, t) + vi(20, 4)


def attr_graph(name, g):
    return s(1, name) + msg(6, g) + vi(20, 5)


def attr_str(name, v):
    return s(1, name) + s(4, v) + vi(20, 3)


def graph(nodes, outputs, name='b'):
    return b''.join(msg(1, n) for n in nodes) + s(2, name) + b''.join(msg(12, o) for o in outputs)


def node(op, ins, outs, name='', attrs=()):
    b = b''.join(s(1, i) for i in ins) + b''.join(s(2, o) for o in outs)
    if name:
        b += s(3, name)
    return b + s(4, op) + b''.join(msg(5, a) for a in attrs)


def model(nodes, inputs, outputs, inits=(), opset=11):
    g = b''.join(msg(1, n) for n in nodes) + s(2, 'g')
    g += b''.join(msg(5, t) for t in inits)
    g += b''.join(msg(11, i) for i in inputs) + b''.join(msg(12, o) for o in outputs)
    return vi(1, 7) + msg(8, s(1, '') + vi(2, opset)) + msg(7, g)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    x = value_info('x', [1, 3, 'N', 'p2o.DynamicDimension.0'])
    y = value_info('y', [])
    if kind == 'unsupported':
        m = model([node('StringNormalizer', ['x'], ['y'], 'norm_3')], [x], [y])
    elif kind == 'external':
        w = tensor('w', [4], external=[('location', 'weights.bin'), ('offset', '0')])
        m = model([node('Add', ['x', 'w'], ['y'], 'add0')], [x], [y], [w])
    elif kind == 'external-ok':   # y = x + w, w's 4 floats in weights.bin beside the model
        import os
        w = tensor('w', [4], external=[('location', 'weights.bin'), ('offset', '0'), ('length', '16')])
        m = model([node('Add', ['x', 'w'], ['y'], 'add0')], [value_info('x', [4])], [value_info('y', [4])], [w])
        with open(os.path.join(os.path.dirname(out) or '.', 'weights.bin'), 'wb') as f:
            f.write(struct.pack('<4f', 1.0, 2.0, 3.0, 4.0))
    elif kind == 'badraw':
        w = tensor('w', [4], raw=b'\0' * 12)
        m = model([node('Add', ['x', 'w'], ['y'], 'add0')], [x], [y], [w])
    elif kind == 'cycle':
        m = model([node('Relu', ['b'], ['a'], 'r0'), node('Relu', ['a'], ['b'], 'r1'),
                   node('Add', ['x', 'a'], ['y'], 'add')], [x], [y])
    elif kind == 'symbolic':
        c = tensor('c', [1], floats=[2.0])
        m = model([node('Constant', [], ['k'], 'k0', [attr_tensor('value', c)]),
                   node('Mul', ['x', 'k'], ['m'], 'mul0'),
                   node('Squeeze', ['m'], ['s'], 'sq0', [attr_ints('axes', [0])]),
                   node('Softmax', ['s'], ['y'], 'sm0', [attr_int('axis', 1)])],
                  [x], [y])
    elif kind == 'reshape':
        m = model([node('Reshape', ['x', 'shape'], ['y'], 'reshape0')],
                  [value_info('x', [2, 3, 4]), value_info('shape', [3], 7)], [y], opset=14)
    elif kind == 'cascade':
        m = model([node('Frobnicate', ['x'], ['a'], 'frob0'), node('Relu', ['a'], ['b'], 'r0'),
                   node('MaxRoiPool', ['x'], ['c'], 'mrp0'), node('Add', ['b', 'c'], ['y'], 'add0')],
                  [x], [y])
    elif kind == 'cascade-seq':      # an out-of-scope operator whose result two nodes read
        m = model([node('SplitToSequence', ['x'], ['q'], 'split0'), node('Relu', ['q'], ['r'], 'r0'),
                   node('Add', ['r', 'q'], ['y'], 'add0')], [x], [y], opset=13)
    elif kind == 'cascade-shape':    # a shape error, then nodes reading its result
        m = model([node('Add', ['x', 'z'], ['a'], 'add_bad'), node('Relu', ['a'], ['b'], 'r0'),
                   node('Mul', ['b', 'a'], ['y'], 'mul0')], [value_info('x', [2, 3, 4]), value_info('z', [5, 7])], [y])
    elif kind == 'cascade-if':       # an unknown operator inside a branch, read after the If
        tb = graph([node('Frobnicate', ['x'], ['t'], 'then_frob'), node('Relu', ['t'], ['t2'], 'then_relu')],
                   [value_info('t2', [2, 3, 4])], 'then')
        eb = graph([node('Neg', ['x'], ['e'], 'else_neg')], [value_info('e', [2, 3, 4])], 'else')
        m = model([node('If', ['c'], ['i'], 'if0', [attr_graph('then_branch', tb), attr_graph('else_branch', eb)]),
                   node('Relu', ['i'], ['y'], 'after')], [value_info('x', [2, 3, 4]), value_info('c', [], 9)], [y], opset=13)
    elif kind == 'cascade-reshape':  # a constant target shape of the wrong size, then readers
        sh = tensor('sh', [2], dtype=7, ints=[5, 5])
        m = model([node('Reshape', ['x', 'sh'], ['a'], 'rs0'), node('Relu', ['a'], ['b'], 'r0'),
                   node('Add', ['b', 'b'], ['y'], 'a0')], [value_info('x', [2, 3, 4])], [y], [sh], opset=14)
    elif kind == 'scanrev':          # Scan over x [3, 2] backwards, the states stacked on axis 1
        body = graph([node('Add', ['s_in', 'x_t'], ['s_out'], 'body_add'), node('Identity', ['s_out'], ['e'], 'body_id')],
                     [value_info('s_out', [2]), value_info('e', [2])], 'body')
        body += msg(11, value_info('s_in', [2])) + msg(11, value_info('x_t', [2]))
        m = model([node('Scan', ['s', 'x'], ['y', 'z'], 'scan0',
                        [attr_graph('body', body), attr_int('num_scan_inputs', 1), attr_ints('scan_input_directions', [1]),
                         attr_ints('scan_output_axes', [1])])],
                  [value_info('s', [2]), value_info('x', [3, 2])], [value_info('y', [2]), value_info('z', [2, 3])], opset=11)
    elif kind == 'scanrev-s.pb':
        m = tensor('s', [2], floats=[0, 0])
    elif kind == 'scanrev-x.pb':
        m = tensor('x', [3, 2], floats=[1, 2, 3, 4, 5, 6])
    elif kind == 'scanrev-y.pb':
        m = tensor('y', [2], floats=[9, 12])
    elif kind == 'scanrev-z.pb':     # iterations 5 6, 8 10, 9 12 as columns
        m = tensor('z', [2, 3], floats=[5, 8, 9, 6, 10, 12])
    elif kind == 'negshape':
        m = model([node('Neg', ['s'], ['t'], 'neg0'), node('Reshape', ['x', 't'], ['y'], 'reshape0')],
                  [value_info('x', [2, 3, 4]), value_info('s', [3], 7)], [y], opset=14)
    elif kind in ('ifshape', 'ifdata'):
        one = tensor('one', [], dtype=7, ints=[24])
        tb = graph([node('Relu', ['x'], ['t'], 'then_relu')], [value_info('t', [2, 3, 4])], 'then')
        eb = graph([node('Neg', ['x'], ['e'], 'else_neg'),
                    node('Reshape', ['e', 'bad'], ['e2'], 'else_reshape')], [value_info('e2', [2, 3, 4])], 'else')
        bad = tensor('bad', [2], dtype=7, ints=[5, 5])   # the else branch cannot infer: must be skipped
        if kind == 'ifshape':
            nodes = [node('Size', ['x'], ['n'], 'size0'), node('Equal', ['n', 'one'], ['c'], 'eq0')]
            ins = [value_info('x', [2, 3, 4])]
        else:
            eb = graph([node('Neg', ['x'], ['e'], 'else_neg')], [value_info('e', [2, 3, 4])], 'else')
            nodes = []
            ins = [value_info('x', [2, 3, 4]), value_info('c', [], 9)]
        nodes.append(node('If', ['c'], ['y'], 'if0', [attr_graph('then_branch', tb), attr_graph('else_branch', eb)]))
        m = model(nodes, ins, [y], [one, bad], opset=13)
    elif kind in ('attn24', 'attn24mask'):
        qkv = [value_info(n, [2, 2, d, 4]) for n, d in (('q', 3), ('k', 5), ('v', 5))]
        if kind == 'attn24':
            ins, extra = ['q', 'k', 'v', '', '', '', 'np'], [value_info('np', [2], 7)]
        else:
            ins, extra = ['q', 'k', 'v', 'mask'], [value_info('mask', [2, 1, 1, 5], 9)]
        m = model([node('Attention', ins, ['y'], 'attn0')], qkv + extra, [y], opset=24)
    elif kind in ('q.pb', 'k.pb', 'v.pb'):
        d = {'q.pb': 3, 'k.pb': 5, 'v.pb': 5}[kind]
        m = tensor(kind[0], [2, 2, d, 4], floats=[((i * 37 + ord(kind[0]) * 11) % 17) / 8.0 - 1 for i in range(16 * d)])
    elif kind == 'np.pb':
        m = tensor('np', [2], dtype=7, ints=[3, 5])
    elif kind == 'mask.pb':
        m = tensor('mask', [2, 1, 1, 5], dtype=9, raw=bytes([1, 1, 1, 0, 0, 1, 1, 1, 1, 1]))
    elif kind == 'seq.pb':
        m = s(1, 'seq') + vi(2, 1) + msg(3, tensor('', [2], floats=[1.0, 2.0]))
    elif kind == 'big':
        w = tensor('w', [1, 5000], floats=[i * 0.25 for i in range(5000)])
        m = model([node('Add', ['x', 'w'], ['y'], 'add0')], [value_info('x', [1, 5000])], [y], [w])
    elif kind == 'shape.pb':
        m = tensor('shape', [3], dtype=7, ints=[3, 4, 2])
    elif kind == 'big-x.pb':
        m = tensor('x', [1, 5000], floats=[0.5] * 5000)
    else:
        sys.exit('mkonnx: unknown kind ' + kind)
    with open(out, 'wb') as f:
        f.write(m)


if __name__ == '__main__':
    main()
