"""testsuite/mpi/Inputs/npy.py OUT.npy DTYPE V,V,...: writes a rank-1 .npy (DTYPE f4 or i8) without
numpy, for the tests' hand-made inputs."""
import struct
import sys

path, dt, vals = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
hdr = "{'descr': '<%s', 'fortran_order': False, 'shape': (%d,), }" % (dt, len(vals))
hdr += ' ' * (63 - (10 + len(hdr)) % 64) + '\n'
data = b''.join(struct.pack('<f' if dt == 'f4' else '<q', float(v) if dt == 'f4' else int(v)) for v in vals)
with open(path, 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + data)
