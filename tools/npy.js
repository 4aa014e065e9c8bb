/* tools/npy.js: .npy (NumPy format 1.0, little-endian float32) read and write for the node tools
 * (tools/make-ocr-goldens.js, tools/ort-time.js). */
'use strict';
const fs = require('fs');

function readNpy(path) {
	const b = fs.readFileSync(path);
	if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(path + ': not .npy');
	const hlen = b.readUInt16LE(8);
	const hdr = b.toString('latin1', 10, 10 + hlen);
	if (!hdr.includes("'<f4'")) throw new Error(path + ': expected <f4');
	const shape = hdr.match(/'shape': \(([^)]*)\)/)[1].split(',').filter(s => s.trim()).map(Number);
	const off = 10 + hlen;
	const data = new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + b.length));
	return { shape, data };
}

function writeNpy(path, shape, data) {
	let hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
		shape.map(d => d + ', ').join('') + '), }';
	hdr += ' '.repeat(64 - ((10 + hdr.length + 1) % 64)) + '\n';
	const h = Buffer.alloc(10);
	Buffer.from('\x93NUMPY\x01\x00', 'latin1').copy(h);
	h.writeUInt16LE(hdr.length, 8);
	fs.writeFileSync(path, Buffer.concat([h, Buffer.from(hdr, 'latin1'),
		Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = { readNpy, writeNpy };
