#!/bin/sh
# testsuite/fuzz/build-fuzz.sh [OUT]: build the libFuzzer harnesses of testsuite/fuzz/ with clang
# (-fsanitize=fuzzer,address,undefined) into OUT (default build-fuzz/), compiling the compiler
# and runtime sources directly.  Needs the generated ONNX bindings (run `make` first).
set -eu
OUT=${1:-build-fuzz}
mkdir -p "$OUT"
FLAGS="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DAICC_VERSION=\"fuzz\" -g -O1 -I. -Ibuild/gen
 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
SRC="$(ls runtime/*.c runtime/*/*.c ir/*.c frontend/*.c frontend/*/*.c 2>/dev/null || true) $(ls build/gen/*.c 2>/dev/null || true) build/gen/onnx/onnx.pb-c.c"
for h in testsuite/fuzz/fuzz_*.c; do
	n=$(basename "$h" .c)
	# shellcheck disable=SC2086
	clang $FLAGS -o "$OUT/$n" "$h" $SRC -lprotobuf-c -lm
	echo "$OUT/$n"
done
