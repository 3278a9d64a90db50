// attnlab sim: the HBM traffic of the two attention schedules, in closed form (notes §2.1, §2.2).
//
// Standard attention moves Θ(N² + Nd) bytes: S and P are written and read once each. FlashAttention
// moves Q and O once and re-reads K and V once per query row block: Θ(N²d/B_r) = Θ(N²d²/M) when the
// row block is sized to the on-chip memory M. These closed forms are what the reference backend's
// counted transfers must equal (tests/sim/test_io_laws.cpp) and what the cost model builds on.
#pragma once

#include "core/problem.h"

#include <map>
#include <string>

namespace attnlab::sim {

using TensorBytes = std::map<std::string, double>;  // "q", "k", "v", "o", "s", "p", "lse"

// Unfused attention with every tensor in `elem_bytes` (4 for FP32).
TensorBytes naive_hbm_bytes(const Problem& p, double elem_bytes);

// FlashAttention-2 forward with B_r × B_c tiles; Q/K/V/O in `elem_bytes`, the logsumexp in FP32.
// Under causal masking a row block reads only the K/V tiles that reach its last row.
TensorBytes flash_hbm_bytes(const Problem& p, int64_t block_r, int64_t block_c, double elem_bytes);

}  // namespace attnlab::sim
