// flash2's warpgroup kernels with their row blocks' timeline (kernels/common/cta_timeline.cuh): where a CTA's cycles
// go beyond its tiles' steady cost — the fill before the first S, the drain, the epilogue, the gap between CTAs on an
// SM, the boundary between two row blocks. Builds kernels/flash2/flash2_sm90.cu with ATTNLAB_FLASH2_TIMELINE on (the
// library's kernels carry none of it), launches one problem on random FP16 inputs and writes one CSV line per (row
// block, consumer warpgroup); kernels/bench/cta_timeline.py reads it. Built on request (kernels/CMakeLists.txt's
// target, not part of `all`) and run on the GPU machine (prefill_session.sh STEP=timeline):
//   cmake --build build-gpu --target flash2_timeline
//   build-gpu/bin/flash2_timeline --batch 4 --heads 16 --len 4096 --dim 128 [--causal] [--order grid|heads|dynamic]
//     [--kv-tile 176|128] --out FILE
// Its own definitions of flash2_sm90.cu's functions stand in for the library's (the static library's flash2_sm90
// object is then never linked).
// The timeline's clock reads and stores are few (eight a warpgroup and block, two from the producer) but not free: its
// times are for the shares, not for the comparison with the peers (that is locked_clocks.py's, on the library's
// kernels). ptxas -v: the grid's and the static persistent kernels keep 0 bytes of spills; the dynamic order's spill
// 88–124 bytes against the library's 36–64 (the producer's 24 registers also hold the record's index there).
#define ATTNLAB_FLASH2_TIMELINE 1
#include "kernels/flash2/flash2_sm90.cu"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace {

using attnlab::kernels::Flash2Args;

__global__ void fill_random(__half* x, size_t n, uint32_t seed) {  // uniform in [−1, 1): a hash of the index
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed ^ uint32_t(i >> 32) * 40503u;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = __float2half(float(h >> 8) * (2.f / 16777216.f) - 1.f);
  }
}

[[noreturn]] void refuse(const std::string& what) {
  std::fprintf(stderr, "flash2_timeline: %s\n", what.c_str());
  std::exit(2);
}

int positive(const char* name, const char* text) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > (1 << 24))
    refuse(std::string(name) + " takes a positive integer, not '" + text + "'");
  return int(v);
}

bool check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "flash2_timeline: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  Flash2Args a;
  a.batch = 4, a.q_heads = a.kv_heads = 16, a.q_len = a.kv_len = 4096, a.head_dim = 128;
  std::string order = "grid", out;
  int kv_tile = 176;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--causal") a.causal = true;
    else if (!has_value) refuse("argument " + std::to_string(i) + " '" + arg + "': unknown, or its value is missing");
    else if (arg == "--batch") a.batch = positive("--batch", argv[++i]);
    else if (arg == "--heads") a.q_heads = a.kv_heads = positive("--heads", argv[++i]);
    else if (arg == "--len") a.q_len = a.kv_len = positive("--len", argv[++i]);
    else if (arg == "--dim") a.head_dim = positive("--dim", argv[++i]);
    else if (arg == "--kv-tile") kv_tile = positive("--kv-tile", argv[++i]);
    else if (arg == "--order") order = argv[++i];
    else if (arg == "--out") out = argv[++i];
    else refuse("argument " + std::to_string(i) + " '" + arg + "': unknown");
  }
  if (a.head_dim != 64 && a.head_dim != 128)
    refuse("--dim " + std::to_string(a.head_dim) + ": the kernels take 64 or 128");
  if (kv_tile != 176 && kv_tile != 128)
    refuse("--kv-tile " + std::to_string(kv_tile) + ": 176 (not causal, d 128) or 128");
  if (order != "grid" && order != "heads" && order != "dynamic")
    refuse("--order '" + order + "': grid, heads or dynamic");
  if (out.empty()) refuse("--out FILE is missing");
  struct stat st{};
  if (stat(out.c_str(), &st) == 0) refuse("--out " + out + " exists: name a new file");
  a.scale = 1.f / std::sqrt(float(a.head_dim));
  a.wide_tile = kv_tile == 176;
  a.persistent = order != "grid", a.head_major = order == "heads", a.dynamic_order = order == "dynamic";

  const size_t qkv = size_t(a.batch) * a.q_heads * a.q_len * a.head_dim;
  const int blocks = (a.q_len + 127) / 128;  // HopperTile's B_r
  const size_t words = size_t(a.batch) * a.q_heads * blocks * 2 * attnlab::kernels::kTimelineFields;
  __half *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *lse = nullptr, *workspace = nullptr;
  unsigned long long* timeline = nullptr;
  const size_t ws = std::max<size_t>(attnlab::kernels::flash2_workspace_bytes(a), 16);
  if (!check(cudaMalloc(&q, qkv * 2), "Q") || !check(cudaMalloc(&k, qkv * 2), "K") ||
      !check(cudaMalloc(&v, qkv * 2), "V") || !check(cudaMalloc(&o, qkv * 2), "O") ||
      !check(cudaMalloc(&lse, qkv / a.head_dim * 4), "L") ||
      !check(cudaMalloc(&workspace, ws), "workspace") || !check(cudaMalloc(&timeline, words * 8), "timeline"))
    return 1;
  fill_random<<<1024, 256>>>(q, qkv, 1u);
  fill_random<<<1024, 256>>>(k, qkv, 2u);
  fill_random<<<1024, 256>>>(v, qkv, 3u);
  a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.workspace = workspace;
  // Three launches without the record (warm: the L2, the clocks), then the recorded one.
  for (int run = 0; run < 4; ++run) {
    a.timeline = run == 3 ? timeline : nullptr;
    if (run == 3 && !check(cudaMemset(timeline, 0, words * 8), "clearing the timeline")) return 1;
    if (!check(attnlab::kernels::flash2_sm90_forward(a, nullptr), "launch")) return 1;
  }
  if (!check(cudaDeviceSynchronize(), "the kernel")) return 1;
  std::vector<unsigned long long> rec(words);
  if (!check(cudaMemcpy(rec.data(), timeline, words * 8, cudaMemcpyDeviceToHost), "reading the timeline")) return 1;

  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  const std::string part = out + ".part";
  FILE* f = std::fopen(part.c_str(), "wx");
  if (!f) refuse("cannot create " + part + ": " + std::strerror(errno));
  std::fprintf(f, "# flash2_timeline: %s, %d SMs; B %d, H %d, N %d, d %d, causal %d, order %s, kv_tile %d\n", p.name,
               p.multiProcessorCount, a.batch, a.q_heads, a.q_len, a.head_dim, int(a.causal), order.c_str(),
               a.causal || a.head_dim != 128 ? 128 : kv_tile);
  std::fprintf(f, "block,group,sm,tiles,cta_start_ns,cta_start,block_start,first_issue,first_scores,last_scores,"
                  "last_pv_issue,loop_done,stored,q_issued,k_issued,stored_ns,staged,met\n");
  for (size_t r = 0; r < words / attnlab::kernels::kTimelineFields; ++r) {
    const unsigned long long* x = rec.data() + r * attnlab::kernels::kTimelineFields;
    if (x[attnlab::kernels::kTimelineBlockStart] == 0) continue;  // not reached (a block with no tile records too)
    std::fprintf(f, "%zu,%zu", r / 2, r % 2);
    for (int field = 0; field < attnlab::kernels::kTimelineFields; ++field) std::fprintf(f, ",%llu", x[field]);
    std::fprintf(f, "\n");
  }
  const bool written = std::fclose(f) == 0;
  if (!written || std::rename(part.c_str(), out.c_str()) != 0) {
    std::remove(part.c_str());
    refuse("cannot write " + out);
  }
  return 0;
}
