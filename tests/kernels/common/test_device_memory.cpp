// GPU memory as an input limit and CUDA errors as internal failures (kernels/common/device_memory.h,
// kernels/common/cuda_check.h): a problem too large for the GPU is InputError (exit 2) naming the bytes it needs
// and the GPU's free memory, before anything runs; a failed allocation is the same; a CUDA error is a
// std::runtime_error (exit 1) naming the error's enum name and the call — a kernel launch names its kernel.
#include "core/config.h"
#include "core/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device.h"
#include "kernels/common/device_memory.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// What f throws as `E`, or "" when it throws nothing (another exception escapes and fails the test).
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

Experiment decode(const nlohmann::json& variant, int64_t kv_len) {
  return parse_experiment({{"problem", {{"batch", 4}, {"q_heads", 32}, {"kv_heads", 8}, {"q_len", 1}, {"kv_len", kv_len},
                                        {"head_dim", 128}, {"phase", "decode"}}},
                           {"variants", {variant}}});
}

TEST_CASE("device memory: the least bytes a kernel needs follow the variant's storage", "[kernels]") {
  const Experiment fp16 = decode({{"id", "flash2"}}, 4096), turbo = decode({{"id", "turbo"}}, 4096);
  const Problem& p = fp16.problem;
  const double q = double(p.q_shape().count()), rows = double(p.batch * p.q_heads);
  const double kv_fp16 = 2.0 * 2.0 * double(p.batch * p.kv_heads * p.kv_len * p.head_dim);
  // flash2 keeps K and V in FP16: Q and O in FP16, the logsumexp in FP32, K and V.
  CHECK(kernels::least_device_bytes(p, fp16.variants[0]) == 4.0 * q + 4.0 * rows + kv_fp16);
  // turbo's cache holds 2- and 4-bit codes with their scales: more than ⅛, less than ⅓ of the FP16 K and V.
  const double t = kernels::least_device_bytes(p, turbo.variants[0]) - 4.0 * q - 4.0 * rows;
  CHECK(t > kv_fp16 / 8);
  CHECK(t < kv_fp16 / 3);
}

// Across GPUs each GPU holds its part of the ring (core/context_parallel_bytes.h), derived here from the ring's buffers:
// flash2's causal prefill of 1M tokens over 4 GPUs (zig-zag: each GPU two chunks of N/8 query rows and keys) holds
// its Q rows in FP16, their FP32 running result and FP16 output with two logsumexps (running + partial bytes a row),
// one block's partial (N/8 rows), and three K/V shards of N/4 tokens in FP16 (its own, two receive buffers); a
// decode's GPU 0 its query, its quarter of the cache, its partial, the three others' and the merged output (merged in
// one pass: no running result).
TEST_CASE("device memory: across GPUs the check is one GPU's part of the ring", "[kernels]") {
  Experiment e = parse_experiment({{"problem", {{"batch", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"q_len", 1 << 20},
                                                {"kv_len", 1 << 20}, {"head_dim", 128}, {"causal", true}, {"gpus", 4}}},
                                   {"variants", {{{"id", "flash2"}}}}});
  const Problem& p = e.problem;
  const double n = double(p.kv_len), d = 128, heads = 32, kv = 2.0 * 2.0 * 8 * n * d;
  const double rows = heads * n / 4, partial = 2 * d + 4, running = 4 * d + 4;
  CHECK(kernels::least_device_bytes(p, e.variants[0]) ==
        Approx(rows * 2 * d + rows * (running + partial) + heads * n / 8 * partial + 3 * kv / 4).epsilon(1e-12));
  Problem one = p;
  one.gpus = 1;
  CHECK(kernels::least_device_bytes(p, e.variants[0]) < 0.8 * kernels::least_device_bytes(one, e.variants[0]));
  Problem dec = one;
  dec.q_len = 1, dec.phase = Phase::decode, dec.causal = false, dec.gpus = 4;
  CHECK(kernels::least_device_bytes(dec, e.variants[0]) ==
        Approx(heads * 2 * d + kv / 4 + heads * partial + heads * (3 * partial + partial)).epsilon(1e-12));
}

TEST_CASE("device memory: a CUDA error names its enum name and the call", "[kernels]") {
  // The message format is host code: checked with the error code a faulting kernel would return.
  const std::string m = message_of<std::runtime_error>([] { kernels::check(cudaErrorIllegalAddress, "turbo_decode_attend(a, nullptr)"); });
  CHECK(has(m, "cudaErrorIllegalAddress"));
  CHECK(has(m, "turbo_decode_attend"));
  CHECK(has(m, "illegal memory access"));
  // An internal failure (exit 1), not bad input.
  bool input_error = true;
  try {
    kernels::check(cudaErrorLaunchFailure, "kivi_decode(args[c], nullptr)");
  } catch (const std::runtime_error& e) {
    input_error = dynamic_cast<const InputError*>(&e) != nullptr;
    CHECK(has(e.what(), "kivi_decode"));
  }
  CHECK_FALSE(input_error);
}

TEST_CASE("device memory: more than the GPU holds is refused, named, and the device stays usable", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  size_t free_bytes = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  // A problem whose K and V alone exceed the total memory.
  const int64_t kv_len = int64_t(double(total) / (2.0 * 2.0 * 4 * 8 * 128)) + 4096;
  const Experiment big = decode({{"id", "flash2"}}, kv_len);
  const double need = kernels::least_device_bytes(big.problem, big.variants[0]);
  REQUIRE(need > double(total));
  const std::string m = message_of<InputError>([&] { kernels::check_device_memory(need, "flash2"); });
  CHECK(has(m, "flash2: needs at least"));
  CHECK(has(m, "GiB free"));
  CHECK_NOTHROW(kernels::check_device_memory(double(free_bytes) / 2, "flash2"));
  // An allocation beyond the free memory: InputError naming its size; the next allocation works.
  CHECK(has(message_of<InputError>([&] { kernels::DeviceBuffer too_big(total + (size_t(1) << 30)); }), "does not fit"));
  kernels::DeviceBuffer small(1 << 20);
  CHECK(small.as<void>() != nullptr);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace
}  // namespace attnlab
