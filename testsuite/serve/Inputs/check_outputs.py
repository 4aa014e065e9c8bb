"""testsuite/serve/Inputs/check_outputs.py REPORT TRACE PNG...: the outputs of `aicc serve` are
what they claim: the report is JSON with the documented keys and consistent numbers, the trace
is Chrome trace-event JSON with one slice per iteration, and each PNG is a picture of the size
the plot asks gnuplot for (1200 x 420)."""
import json
import struct
import sys

rep = json.load(open(sys.argv[1]))
for k in ('deployment', 'scheduler', 'pools', 'ttft_s', 'tpot_s', 'e2e_s', 'goodput_req_per_s', 'slo_met',
          'kv_util_max', 'engine_cpu_s', 'accelerator_s', 'series', 'iterations'):
    assert k in rep, k
assert rep['ttft_s']['p50'] <= rep['ttft_s']['p90'] <= rep['ttft_s']['p99']
assert 0 <= rep['attainment'] <= 1 and rep['goodput_req_per_s'] <= rep['throughput_req_per_s'] + 1e-9
assert rep['pools'][0]['plans_compiled'] > 0 and rep['pools'][0]['kv_tokens'] > 0
print('report: %d requests, %d iterations, goodput %.3g req/s, SLO %s' % (
    rep['requests'], rep['iterations'], rep['goodput_req_per_s'], 'met' if rep['slo_met'] else 'missed'))
tr = json.load(open(sys.argv[2]))
ev = tr['traceEvents']
slices = [e for e in ev if e['ph'] == 'X']
assert len(slices) == rep['iterations'], (len(slices), rep['iterations'])
assert all(e['dur'] > 0 for e in slices)
assert any(e['ph'] == 'C' for e in ev) and any(e['ph'] == 'M' for e in ev)
print('trace: %d slices, one per iteration' % len(slices))
for png in sys.argv[3:]:
    data = open(png, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', png
    w, h = struct.unpack('>II', data[16:24])
    assert (w, h) == (1200, 420), (w, h)
    assert len(data) > 10000, len(data)    # curves, axes and labels, not an empty canvas
    print('png: %dx%d' % (w, h))
