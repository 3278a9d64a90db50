// libFuzzer target: one .npy file through load_npy (core/data/npy.h): the preamble, the header's
// Python-dict parser, the size checks against the file and the data decode.
#include "core/data/npy.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tensor_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlab;
  const std::string path = fuzz::write_scratch("q.npy", data, size);
  fuzz::refusals_allowed([&] { fuzz::check_loaded(data::load_npy(path), "q.npy"); });
  return 0;
}
