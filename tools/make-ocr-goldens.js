#!/usr/bin/env node
/* tools/make-ocr-goldens.js MODEL.onnx IN.npy OUT.npy: run the model in onnxruntime (CPU) on one
 * f32 .npy input and write its first output as an f32 .npy: the golden the OCR test compares
 * aicc against.  Needs `onnxruntime-node` on NODE_PATH; tools/make-ocr-goldens.sh installs
 * onnxruntime-node@1.30.0 with --ignore-scripts into a scratch folder (never committed). */
'use strict';
const ort = require('onnxruntime-node');
const { readNpy, writeNpy } = require('./npy.js');

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
