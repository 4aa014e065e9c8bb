#!/bin/sh
# testsuite/viz/update.sh [BUILD]: regenerate the golden DOT files of testsuite/viz/Inputs from
# the aicc in BUILD (default: build).  Review the diff before committing.
set -eu
cd "$(dirname "$0")"
aicc=../../${1:-build}/aicc
$aicc compile ir-repeat.aig -O1 --emit dot >Inputs/ir-repeat.dot
$aicc compile ir-repeat.aig -O1 --emit dot --expand >Inputs/ir-repeat-expand.dot
$aicc explain placed.aip --emit dot >Inputs/placed.dot
$aicc compile plan-repeat.aig -O1 --target reference --emit dot >Inputs/plan-repeat.dot
