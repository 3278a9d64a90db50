set -u
out=${OUT:-/tmp/o}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA_ARCHITECTURES=90a >/dev/null 2>&1
cmake --build build-gpu -j "$(nproc)" --target attnlab attnlab_tests >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
build-gpu/bin/attnlab_tests "[gpu]" 2>&1 | tail -4 | tee "$out/gpu-tests.log"
cat > /tmp/one.json <<'J'
{"problem": {"batch": 4, "q_heads": 16, "kv_heads": 16, "q_len": 4096, "kv_len": 4096, "head_dim": 128},
 "data": {"generator": "normal", "seed": 1}, "variants": [{"id": "flash2"}, {"id": "int_flash"}], "backends": ["kernel"]}
J
for k in flash2_kernel int_flash_kernel; do
  ncu --kernel-name regex:$k --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section InstructionStats build-gpu/bin/attnlab bench --config /tmp/one.json >"$out/ncu-$k.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Stall|Issue Slots Busy|Executed Ipc|No Eligible|Warp Cycles Per Issued|pipe|Pipe" "$out/ncu-$k.txt" | head -40
done
