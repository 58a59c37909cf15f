o=gpu-out/hoist
for r in 1 2; do
python3 tools/gpu/kernels.py $o/base-1024/sm_90a $o/hoist-1024/sm_90a $o/base2-1024/sm_90a $o/hoist2-1024/sm_90a --only layernorm,rmsnorm --time --no-check --no-inductor --dir-tags --shapes 65536x1024 --json $OUT/hoist-$r.json 2>&1 | grep time
done
