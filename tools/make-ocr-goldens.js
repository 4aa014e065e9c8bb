#!/usr/bin/env node
/* tools/make-ocr-goldens.js MODEL.onnx IN.npy OUT.npy: run the model in onnxruntime (CPU) on one
 * f32 .npy input and write its first output as an f32 .npy: the golden the OCR test compares
 * aicc against.  Needs `onnxruntime-node` on NODE_PATH; tools/make-ocr-goldens.sh installs
 * onnxruntime-node@1.30.0 with --ignore-scripts into a scratch folder (never committed). */
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

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

async function main() {
	const [model, inp, out] = process.argv.slice(2);
	if (!out) throw new Error('usage: make-ocr-goldens.js MODEL.onnx IN.npy OUT.npy');
	const s = await ort.InferenceSession.create(model, { executionProviders: ['cpu'],
		graphOptimizationLevel: 'disabled' });
	const x = readNpy(inp);
	const feeds = {};
	feeds[s.inputNames[0]] = new ort.Tensor('float32', x.data, x.shape);
	const r = await s.run(feeds);
	const y = r[s.outputNames[0]];
	writeNpy(out, y.dims, y.data);
	console.log(s.inputNames[0] + ' ' + x.shape.join('x') + ' -> ' + s.outputNames[0] + ' ' +
		y.dims.join('x'));
}
main().catch(e => { console.error('make-ocr-goldens: ' + e.message); process.exit(1); });
