#!/bin/sh
# tools/tpu-doc-numbers.sh [BUILD]: regenerates the numbers docs/targets-tpu.md quotes in its
# "Predictions" and "Llama-3.1-8B, one chip and a slice" tables (aicc compile + aicc run
# --timing-only, one line per cell).  The "Against measurements" figures are make validate's.
set -eu
B=${1:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
lat() {   # lat ARGS...: the predicted step latency of one compile
	"$B/aicc" compile "$@" --emit plan -o "$T/p.aip" >/dev/null 2>"$T/err" || { echo "fails: $(head -c 120 "$T/err")"; return; }
	"$B/aicc" run "$T/p.aip" --timing-only | sed -n 's/^latency *//p'
}
echo "== Predictions (one chip, bf16)"
for m in tpu-v5e tpu-v6e tpu-v7 tpu-8i; do
	echo "$m gpt2-small B=1 S=1: $(lat examples/gpt2-small.aig --target tpu --machine $m --bind B=1,S=1)"
	echo "$m gpt2-small B=1 S=128: $(lat examples/gpt2-small.aig --target tpu --machine $m --bind B=1,S=128)"
done
for m in tpu-v5e tpu-v7; do
	echo "$m llama3.1-8b B=1 S=1: $(lat examples/llama3.1-8b.aig --target tpu --machine $m --bind B=1,S=1)"
done
echo "== Llama-3.1-8B decode (context 8192) and prefill (2048)"
P=--passes=canonicalize,partition
for m in "tpu-v5e-256 $P --pp 2" "tpu-v5p" "tpu-v5p-64 $P --pp 2" "tpu-v7" "tpu-v7-64 $P --pp 2" "tpu-8i" "tpu-8i-4 $P --pp 2"; do
	set -- $m
	mach=$1; shift
	echo "$mach TPOT: $(lat examples/llama3.1-8b.aig --target tpu --machine $mach "$@" --phase decode --batch 1 --context 8192)" \
	     " TTFT: $(lat examples/llama3.1-8b.aig --target tpu --machine $mach "$@" --phase prefill --batch 1 --context 2048)"
done
echo "== Llama-3.1-8B decode on tpu-v5e-256, batch 1, context 4096"
Q=--passes=canonicalize,place-precision,fuse,partition,schedule,plan-memory
echo "--pp 2: $(lat examples/llama3.1-8b.aig --target tpu --machine tpu-v5e-256 $Q --pp 2 --phase decode --batch 1 --context 4096)"
echo "--tp 4: $(lat examples/llama3.1-8b.aig --target tpu --machine tpu-v5e-256 $Q --tp 4 --phase decode --batch 1 --context 4096)"
echo "== feed-forward block (testsuite/tpu/Inputs/tp-ffn.aig, T=16, D=1024, F=4096)"
F="testsuite/tpu/Inputs/tp-ffn.aig --bind T=16,D=1024,F=4096"
echo "one v5e: $(lat $F --target tpu --machine tpu-v5e)"
for m in tpu-v5e-256 tpu-v5p-64 tpu-v7-64 tpu-8i-4; do
	echo "$m --tp 4: $(lat $F --target tpu --machine $m --passes=partition --tp 4)"
done
