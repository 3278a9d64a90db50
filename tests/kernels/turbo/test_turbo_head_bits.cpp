// TurboAttention's head priority and bit assignment on the GPU (kernels/turbo/turbo_head_bits.cu) against the host's
// (core/quant/head_priority.cpp), on the GPU. Skipped, with the reason printed, where there is no usable GPU.
//
// No tolerance: the minima and maxima are exact in any order, and the kernel adds the FP64 terms one by one in the
// host's order with each operation rounded once, so every pair's score is the host's double bit for bit, and the
// widths equal; ties (two heads with the same keys) rank by head index on both.
#include "core/data/generators.h"
#include "core/formats/round.h"
#include "core/quant/head_priority.h"
#include "kernels/common/fp16_upload.h"
#include "kernels/turbo/turbo_head_bits.h"
#include "kernels/turbo/turbo_prefill_host.h"
#include "tests/catch.h"
#include "tests/support/turbo_gpu.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

struct GpuRanking {
  std::vector<double> priorities;
  std::vector<int> bits;
};

GpuRanking rank_on_gpu(const Problem& p, const Tensor& k, bool fp16, int tokens, quant::PriorityMetric metric,
                       int two_bit_heads) {
  kernels::TurboHeadBitsArgs a;
  a.batch = int(p.batch), a.kv_heads = int(p.kv_heads), a.tokens = tokens, a.head_dim = int(p.head_dim);
  a.head_stride = p.kv_len * p.head_dim, a.metric = metric, a.two_bit_heads = two_bit_heads;
  const size_t pairs = size_t(p.batch * p.kv_heads);
  kernels::DeviceBuffer scratch(kernels::turbo_head_bits_scratch_bytes(a)), priorities(pairs * sizeof(double)),
      bits(pairs * sizeof(int));
  a.scratch = scratch.as<void>(), a.priorities = priorities.as<double>(), a.bits = bits.as<int>();
  const kernels::DeviceBuffer keys = fp16 ? kernels::upload_rounded_fp16(k) : kernels::upload(k.values());
  ATTNLAB_CUDA(fp16 ? kernels::turbo_head_bits(a, keys.as<__half>(), nullptr)
                    : kernels::turbo_head_bits(a, keys.as<float>(), nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  GpuRanking r{std::vector<double>(pairs), std::vector<int>(pairs)};
  ATTNLAB_CUDA(cudaMemcpy(r.priorities.data(), priorities.as<void>(), priorities.bytes(), cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(r.bits.data(), bits.as<void>(), bits.bytes(), cudaMemcpyDeviceToHost));
  return r;
}

void check_ranking(const Problem& p, Tensor k, bool fp16, int tokens, quant::PriorityMetric metric, int two_bit_heads) {
  if (fp16) formats::round_fp16_inplace(k.data(), k.size());  // the values the GPU reads
  const GpuRanking got = rank_on_gpu(p, k, fp16, tokens, metric, two_bit_heads);
  for (int64_t b = 0; b < p.batch; ++b) {
    std::vector<double> want(size_t(p.kv_heads));
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      want[size_t(h)] = quant::head_priority(k.head(b, h).data(), tokens, p.head_dim, metric);
      const double g = got.priorities[size_t(b * p.kv_heads + h)];
      INFO(fmt::format("sequence {} head {}: GPU {:.17g}, host {:.17g}", b, h, g, want[size_t(h)]));
      CHECK(std::memcmp(&g, &want[size_t(h)], sizeof(double)) == 0);
    }
    const std::vector<int> bits = quant::assign_bits(want, two_bit_heads, 2, 4);
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      INFO(fmt::format("sequence {} head {}", b, h));
      CHECK(got.bits[size_t(b * p.kv_heads + h)] == bits[size_t(h)]);
    }
  }
}

TEST_CASE("turbo head bits on the GPU equal the host's Eq. 11-12 bit for bit", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 7100;
  const quant::PriorityMetric metrics[] = {quant::PriorityMetric::gap_std, quant::PriorityMetric::min_max,
                                           quant::PriorityMetric::variation};
  for (int64_t d : {64, 128})
    for (const char* gen : {"normal", "llm_like"}) {
      Problem p;
      p.batch = 3, p.q_heads = 8, p.kv_heads = 8, p.head_dim = d, p.q_len = 1, p.kv_len = 1000;
      const QKV in = data::generate(p, gen, ParamValues::defaults(data::find_generator(gen)->params), ++seed);
      for (const quant::PriorityMetric m : metrics)
        for (const bool fp16 : {false, true})
          for (const int tokens : {1000, 700, 1})  // every key; a prefix (decode's prefill part); one token
            for (const int n_h : {0, 3, 8}) {
              INFO(fmt::format("{} d={} metric {} fp16={} tokens={} n_h={} seed={}", gen, d, int(m), fp16, tokens, n_h,
                               seed));
              check_ranking(p, in.k, fp16, tokens, m, n_h);
            }
    }
}

TEST_CASE("turbo head bits on the GPU break ties by head index as the host does", "[gpu][kernels][turbo]") {
  // Heads 2 and 5 hold the same keys, so their scores are equal: with n_h = 3 the boundary falls between them when
  // they rank second and third, or takes both — whichever, the GPU's widths are the host's.
  GPU_OR_SKIP();
  Problem p;
  p.batch = 2, p.q_heads = 6, p.kv_heads = 6, p.head_dim = 64, p.q_len = 1, p.kv_len = 300;
  QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), 7200);
  for (int64_t b = 0; b < p.batch; ++b)
    std::memcpy(in.k.head(b, 5).data(), in.k.head(b, 2).data(), size_t(p.kv_len * p.head_dim) * sizeof(float));
  for (int n_h = 0; n_h <= 6; ++n_h) {
    INFO("n_h " << n_h);
    check_ranking(p, in.k, false, 300, quant::PriorityMetric::gap_std, n_h);
  }
}

TEST_CASE("turbo head bits on the GPU refuse the entropy metric and bad arguments", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  CHECK_FALSE(kernels::turbo_head_bits_supports(quant::PriorityMetric::entropy));
  CHECK(kernels::turbo_head_bits_supports(quant::PriorityMetric::gap_std));
  kernels::TurboHeadBitsArgs a;
  a.batch = 1, a.kv_heads = 2, a.tokens = 10, a.head_dim = 64, a.head_stride = 640;
  kernels::DeviceBuffer scratch(kernels::turbo_head_bits_scratch_bytes(a)), bits(2 * sizeof(int)), k(640 * 2 * sizeof(float));
  a.scratch = scratch.as<void>(), a.bits = bits.as<int>();
  a.metric = quant::PriorityMetric::entropy;
  CHECK(kernels::turbo_head_bits(a, k.as<float>(), nullptr) == cudaErrorInvalidValue);
  a.metric = quant::PriorityMetric::gap_std, a.two_bit_heads = 3;  // more than the heads
  CHECK(kernels::turbo_head_bits(a, k.as<float>(), nullptr) == cudaErrorInvalidValue);
  a.two_bit_heads = 1, a.head_dim = 96;
  CHECK(kernels::turbo_head_bits(a, k.as<float>(), nullptr) == cudaErrorInvalidValue);
  a.head_dim = 64;
  CHECK(kernels::turbo_head_bits(a, k.as<float>(), nullptr) == cudaSuccess);
  ATTNLAB_CUDA(cudaDeviceSynchronize());
}

// Where the prefill ranks on the GPU: only where n_h leaves a choice (0 and every head need no ranking) and the metric
// is one the GPU computes bit for bit. A CPU test: the rule, not a kernel.
TEST_CASE("turbo prefill ranks on the GPU only where n_h leaves a choice and the metric is exact there", "[kernels][turbo]") {
  Problem p;
  p.batch = 2, p.q_heads = 8, p.kv_heads = 4, p.head_dim = 128, p.q_len = 64, p.kv_len = 64;
  for (const int n_h : {0, 1, 3, 4})
    for (const char* metric : {"gap_std", "min_max", "variation", "entropy"}) {
      INFO("n_h " << n_h << ", " << metric);
      const ParamValues pv = test::turbo_params({{"two_bit_heads", n_h}, {"priority", metric}});
      CHECK(kernels::turbo_ranks_on_gpu(p, pv) == (n_h > 0 && n_h < 4 && std::string(metric) != "entropy"));
    }
}

}  // namespace
}  // namespace attnlab
