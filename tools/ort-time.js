#!/usr/bin/env node
/* tools/ort-time.js MODEL.onnx IN.npy N: onnxruntime's (CPU, one intra- and inter-op thread, all
 * graph optimisations) host times of one model, as tools/bench.py pairs them with
 * `aicc run --repeat N`: session creation, the first run, and the median of the other N-1 runs,
 * printed as "ort load S first S steady S cpu_steady S" (cpu_steady: the median of the other
 * runs' process cpu time, user + system, as `aicc run --repeat` prints its "host cpu").  Needs `onnxruntime-node` on NODE_PATH (tools/bench.py
 * installs it with npm into a scratch folder). */
'use strict';
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy.js');

async function main() {
	const [model, inp, n] = process.argv.slice(2);
	const reps = Number(n);
	if (!(reps >= 2)) throw new Error('usage: ort-time.js MODEL.onnx IN.npy N (N >= 2)');
	const t0 = process.hrtime.bigint();
	const s = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: 1,
		interOpNumThreads: 1, executionMode: 'sequential' });
	const load = Number(process.hrtime.bigint() - t0) / 1e9;
	const x = readNpy(inp);
	const feeds = {};
	feeds[s.inputNames[0]] = new ort.Tensor('float32', x.data, x.shape);
	const runs = [], cpus = [];
	for (let i = 0; i < reps; i++) {
		const a = process.hrtime.bigint(), c = process.cpuUsage();
		await s.run(feeds);
		const d = process.cpuUsage(c);
		runs.push(Number(process.hrtime.bigint() - a) / 1e9);
		cpus.push((d.user + d.system) / 1e6);
	}
	const median = v => {
		const r = v.slice(1).sort((a, b) => a - b), m = r.length;
		return m % 2 ? r[(m - 1) / 2] : (r[m / 2 - 1] + r[m / 2]) / 2;
	};
	console.log('ort load ' + load + ' first ' + runs[0] + ' steady ' + median(runs) + ' cpu_steady ' + median(cpus));
}
main().catch(e => { console.error('ort-time: ' + e.message); process.exit(1); });
