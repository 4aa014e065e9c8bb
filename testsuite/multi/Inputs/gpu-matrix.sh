#!/bin/sh
# gpu-matrix.sh AICC EXAMPLES TMP: compile and --check the issue-6 matrix, one line per plan.
A=$1; EX=$2; T=$3
LB="--bind B=1,S=8,L=4,H=4,KV=2,HD=16,F=96,V=512,CTX=16 --init-unbound normal:0.02:1"
MB="--bind B=1,S=8,L=4,H=4,KV=2,HD=16,E=4,K=2,F=48,V=512,CTX=16 --init-unbound normal:0.02:2"
P="--passes=canonicalize,place-precision,fuse,partition,plan-memory"
for model in llama3.1-8b mixtral-8x7b; do
  if [ $model = llama3.1-8b ]; then B=$LB; else B=$MB; fi
  for cfg in "hopper h100-sxm -O1" "hopper dgx-h100 $P --tp 2" "blackwell b200 -O1" "blackwell gb200-nvl72 $P --tp 2 --pp 2"; do
    set -- $cfg; t=$1; m=$2; shift 2
    for prec in bf16 fp8 nvfp4; do
      [ $t = hopper ] && [ $prec = nvfp4 ] && continue
      if ! $A compile $EX/$model.aig $B --target $t --machine $m --precision $prec "$@" --emit plan -o $T.aip 2>$T.err; then
        echo "$model $t $m $prec: FAIL compile: $(head -1 $T.err)"; continue
      fi
      n=$(grep -c 'mma_in=\(f8e4m3\|nvfp4\)' $T.aip)
      if [ $prec != bf16 ] && [ "$n" -eq 0 ]; then echo "$model $t $m $prec: FAIL no $prec MMA in the plan"; fi
      r=$($A run $T.aip --check 2>&1 | sed -n 's/^check *\(logits:.*\)/\1/p')
      echo "$model $t $m $prec: check ${r:-FAIL no check line}"
    done
  done
done
