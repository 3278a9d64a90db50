// attnlab data: the shapes a Q/K/V file declares, read from its headers alone (no tensor data), so a
// caller can size the problem and check the memory it needs before anything large is read.
#pragma once

#include "core/tensor.h"

namespace attnlab::data {

struct QkvShapes {
  Shape4 q;  // (B, Hq, Nq, d)
  Shape4 k;  // (B, Hkv, Nkv, d)
  Shape4 v;  // as k
};

}  // namespace attnlab::data
