// libFuzzer target: one .safetensors file through load_safetensors (core/data/safetensors.h): the
// header length, the JSON header, each entry's dtype, shape and data_offsets, and the q/k/v agreement.
#include "core/data/safetensors.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tensor_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlab;
  const std::string path = fuzz::write_scratch("qkv.safetensors", data, size);
  fuzz::refusals_allowed([&] {
    const QKV t = data::load_safetensors(path);
    fuzz::check_loaded(t.q, "q");
    fuzz::check_loaded(t.k, "k");
    fuzz::check_loaded(t.v, "v");
    fuzz::check(t.q.shape().batch == t.k.shape().batch && t.k.shape() == t.v.shape() &&
                    t.q.shape().dim == t.k.shape().dim && t.q.shape().heads % t.k.shape().heads == 0,
                "q, k and v accepted with shapes that do not fit together");
  });
  return 0;
}
