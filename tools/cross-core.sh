#!/bin/sh
# tools/cross-core.sh AICC [TMPDIR]: the cross-core determinism check (issue 18; run by
# testsuite/run/cross-core.test, so by `make check`).  Compiles a set of plans and runs them once
# per configuration below, and requires every plan file and every output .npy to be
# byte-identical to the auto-detected configuration's.  The configurations force OpenBLAS's core
# type (OPENBLAS_CORETYPE: Haswell, Zen, SkylakeX where the CPU has AVX-512F/BW/VL/DQ), aicc's
# matrix-kernel instruction set (AICC_ISA: scalar, avx2, avx512 where supported) and glibc's
# libm variants (GLIBC_TUNABLES hwcaps without FMA/AVX2: the non-FMA exp/log/pow/sin code).
# Prints one line per configuration ("identical" or the differing files) and a summary; exits 1
# on any difference.
set -eu
AICC=${1:-build/aicc}
case $AICC in /*) ;; *) AICC=$(pwd)/$AICC ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OWN=0
if [ $# -ge 2 ]; then T=$2; mkdir -p "$T"; else T=$(mktemp -d); OWN=1; fi
cleanup() { [ "$OWN" -eq 0 ] || rm -rf "$T"; }
trap cleanup EXIT INT TERM
EX=$ROOT/examples

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { case " $flags " in *" $1 "*) return 0;; esac; return 1; }
configs="auto"
if has avx2 && has fma; then configs="$configs haswell zen"; fi
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then configs="$configs skylakex"; fi
configs="$configs scalar nofma-libm"

# The environment of configuration $1 (as `env` arguments).
envof() {
	case $1 in
	auto) echo "AICC_CROSS=auto" ;;
	haswell) echo "OPENBLAS_CORETYPE=Haswell AICC_ISA=avx2" ;;
	zen) echo "OPENBLAS_CORETYPE=Zen AICC_ISA=avx2" ;;
	skylakex) echo "OPENBLAS_CORETYPE=SkylakeX AICC_ISA=avx512" ;;
	scalar) echo "OPENBLAS_CORETYPE=Prescott AICC_ISA=scalar" ;;
	nofma-libm) echo "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F AICC_ISA=scalar" ;;
	esac
}

L8="--bind B=1,S=1,L=2,H=4,KV=2,HD=16,F=96,V=512,CTX=16 --init-unbound normal:0.02:1"
# name|compile arguments (each plan is also run with seeded inputs)
plans="
tp2-decode|$EX/llama3.1-8b.aig $L8 --phase decode --context 8 --target reference --machine dgx-h100 --passes=canonicalize,partition --tp 2
one-decode|$EX/llama3.1-8b.aig $L8 --phase decode --context 8 --target reference
tp2-prefill|$EX/llama3.1-8b.aig --bind B=1,S=4,L=2,H=4,KV=2,HD=16,F=96,V=512,CTX=16 --init-unbound normal:0.02:1 --phase prefill --context 4 --target reference --machine dgx-h100 --passes=canonicalize,partition --tp 2
lpu-tp2|$EX/llama3.1-8b.aig --target lpu --machine groq-rack-v1 --phase decode --batch 1 --context 16 --bind L=4,H=4,KV=2,HD=16,F=96,V=512,CTX=32 --init-unbound normal:0.02:1 --passes=partition --tp 2 --pp 2
hopper-gpt2|$EX/gpt2-small.aig --target hopper --bind L=2,H=2,HD=16,F=64,V=256,P=16,B=1,S=8 --init-unbound normal:0.02:1
vit-O1|$EX/vit-b16.aig --bind B=1,IMG=32,P=8,L=2,H=2,HD=16,F=64,C=10 --init-unbound normal:0.02:1 -O1
fold-matmul|$ROOT/testsuite/run/Inputs/fold-matmul.aig -O1
mixtral-vr|$EX/mixtral-8x7b.aig --bind L=2,H=4,KV=2,HD=16,E=4,K=2,F=48,V=512,CTX=16 --init-unbound normal:0.02:1 --phase decode --batch 4 --context 8 --passes=canonicalize,disaggregate --target vera-rubin --micro-batches 2
"
OCR=$ROOT/.cache/models/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx
if [ -f "$OCR" ]; then plans="$plans
ocr-rec-O1|$OCR --shape x=1,3,48,64 -O1"
fi

# Runs every plan under configuration $1 into $T/$1 and writes $T/$1.sum (sha256 of every file).
run_config() {
	d=$T/$1
	rm -rf "$d" && mkdir -p "$d"
	echo "$plans" | while IFS='|' read -r name args; do
		[ -n "$name" ] || continue
		# shellcheck disable=SC2086
		env $(envof "$1") "$AICC" compile $args --emit plan -o "$d/$name.aip" >/dev/null 2>"$d/$name.err" ||
			{ echo "cross-core: $1: compiling $name failed:" >&2; cat "$d/$name.err" >&2; exit 1; }
		env $(envof "$1") "$AICC" run "$d/$name.aip" --output-dir "$d/$name.out" >/dev/null 2>"$d/$name.err" ||
			{ echo "cross-core: $1: running $name failed:" >&2; cat "$d/$name.err" >&2; exit 1; }
		rm -f "$d/$name.err"
	done
	# plan text names its own path (weights); compare from inside the directory
	(cd "$d" && find . -type f | LC_ALL=C sort | xargs sha256sum) >"$T/$1.sum"
}

bad=0
n=0
for c in $configs; do
	run_config "$c"
	n=$((n + 1))
	if [ "$c" = auto ]; then
		echo "cross-core: auto: $(wc -l <"$T/auto.sum") files ($(echo "$plans" | grep -c '|') plans and their outputs)"
		continue
	fi
	if cmp -s "$T/auto.sum" "$T/$c.sum"; then
		echo "cross-core: $c ($(envof "$c")): identical"
	else
		echo "cross-core: $c ($(envof "$c")): DIFFERS:"
		diff "$T/auto.sum" "$T/$c.sum" | sed -n 's/^> [0-9a-f]*  /  /p' | head -n 20
		bad=1
	fi
done
if [ "$bad" -eq 0 ]; then
	echo "cross-core: $n configurations: plans and outputs byte-identical"
else
	echo "cross-core: outputs depend on the host configuration"
	exit 1
fi
