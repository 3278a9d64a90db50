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

// The backward passes (notes §2.3), every tensor in `elem_bytes` except the FP32 logsumexp.
// Standard backward (Eq. 5) with P saved by the forward: reads Q, K, V, dO and P; dV = PᵀdO and
// dP = dO·Vᵀ read P and write dP; dS = P∘(dP − u) reads both and writes dS; dQ = dS·K and dK = dSᵀQ
// read dS twice: P, dP and dS move 2 + 2 + 3 times N_q·N_kv elements per head.
TensorBytes naive_backward_hbm_bytes(const Problem& p, double elem_bytes);
// FlashBackward: the outer loop over KV blocks j (B_c keys) loads Kⱼ, Vⱼ once and writes dKⱼ, dVⱼ once;
// the inner loop over the query blocks i that see block j loads Qᵢ, Oᵢ, dOᵢ, dQᵢ and ξᵢ and writes dQᵢ
// back — Θ(N²d/B_c) = Θ(N²d²/M) with B_c = Θ(M/d) (the notes' choice Λ = Θ(M/d)).
TensorBytes flash_backward_hbm_bytes(const Problem& p, int64_t block_r, int64_t block_c, double elem_bytes);

}  // namespace attnlab::sim
