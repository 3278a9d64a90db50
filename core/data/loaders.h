// attnlab data: loading and saving real Q/K/V activations.
//
// Two on-disk forms, both holding q (B, Hq, Nq, d), k and v (B, Hkv, Nkv, d):
//   - one .safetensors file with tensors "q", "k", "v" in F32, F16 or BF16 (safetensors.h);
//   - a folder with q.npy, k.npy, v.npy in float32 or float16, C order (npy.h).
// Every problem with a file is an InputError "<file>[: tensor '<name>']: <rule>": missing or unreadable
// file, truncation, a malformed header, a missing tensor, an unsupported dtype or layout, a shape that
// is not 4-D or has a zero dimension, data_offsets that disagree with dtype × shape, q/k/v shapes that
// do not fit together, and any NaN or Inf (with the first flat index). Sizes from headers are
// checked for overflow and against the real file size before anything is allocated. Only regular files are
// read (a FIFO or device is refused before it is opened, so nothing blocks); a symlink loop is refused.
#pragma once

#include "core/data/dtype.h"
#include "core/data/npy.h"
#include "core/data/safetensors.h"
#include "core/tensor.h"

#include <string>

namespace attnlab::data {

// A directory is read with load_npy_folder, anything else with load_safetensors.
QKV load_qkv(const std::string& path);

// The same choice and the same header checks, reading only the headers: the shapes q, k, v will have.
QkvShapes read_qkv_shapes(const std::string& path);

}  // namespace attnlab::data
