"""tools/npyio.py: minimal .npy and ONNX TensorProto (.pb) writers and an .npy reader for the OCR
tools, in plain Python (no numpy): little-endian f32 and i64 arrays, C order.  Used by
render-text.py and ctc-decode.py so the test path needs only python3 and python3-pil."""
import ast
import struct

_DT = {'<f4': ('f', 4, 1), '<i8': ('q', 8, 7)}   # struct code, size, ONNX data type


def write_npy(path, shape, values, dtype='<f4'):
    code, size, _ = _DT[dtype]
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, ''.join('%d, ' % d for d in shape) if len(shape) != 1 else '%d,' % shape[0])
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + ' ' * pad + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode('latin1'))
        f.write(struct.pack('<%d%s' % (len(values), code), *values))


def read_npy(path):
    """Returns (shape, flat list of values) of a little-endian f4/f8/f2/i8/i4 or bf16 (V2) .npy
    file."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:6] != b'\x93NUMPY':
        raise ValueError('%s: not an .npy file' % path)
    major = data[6]
    if major == 1:
        hlen = struct.unpack('<H', data[8:10])[0]
        off = 10
    else:
        hlen = struct.unpack('<I', data[8:12])[0]
        off = 12
    hdr = ast.literal_eval(data[off:off + hlen].decode('latin1'))
    if hdr['fortran_order']:
        raise ValueError('%s: Fortran order is not supported' % path)
    codes = {'<f4': 'f', '<f8': 'd', '<i8': 'q', '<i4': 'i', '<f2': 'e', '<V2': 'H', '|V2': 'H'}
    if hdr['descr'] not in codes:
        raise ValueError('%s: dtype %s is not supported' % (path, hdr['descr']))
    shape = tuple(hdr['shape'])
    n = 1
    for d in shape:
        n *= d
    code = codes[hdr['descr']]
    vals = struct.unpack_from('<%d%s' % (n, code), data, off + hlen)
    if code == 'H':   # bf16 (aicc writes it as two raw bytes): the top half of an f32
        vals = struct.unpack('<%df' % n, struct.pack('<%dI' % n, *(v << 16 for v in vals)))
    return shape, list(vals)


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def write_pb(path, name, shape, values, dtype='<f4'):
    """A serialized onnx.TensorProto: dims (1), data_type (2), name (8), raw_data (9)."""
    code, size, onnx_type = _DT[dtype]
    msg = bytearray()
    for d in shape:
        msg += b'\x08' + _varint(d)
    msg += b'\x10' + _varint(onnx_type)
    nb = name.encode()
    msg += b'\x42' + _varint(len(nb)) + nb
    raw = struct.pack('<%d%s' % (len(values), code), *values)
    msg += b'\x4a' + _varint(len(raw)) + raw
    with open(path, 'wb') as f:
        f.write(bytes(msg))
