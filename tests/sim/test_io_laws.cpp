// The bytes the reference backend counts while it runs equal the closed-form IO laws of sim/, and the
// laws behave as the notes say: standard attention's S/P traffic grows as N², FlashAttention's K/V
// re-reads as ⌈N/B_r⌉·N, and flash moves fewer bytes once N ≥ 2·block.
#include "core/data/generators.h"
#include "core/registry.h"
#include "sim/io_laws.h"
#include "tests/catch.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

QKV inputs(const Problem& p) {
  return data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), 3);
}

double probe_entry(const ProbeArray& a, const std::string& label) {
  for (size_t i = 0; i < a.labels.size(); ++i)
    if (a.labels[i] == label) return a.values[i];
  FAIL("no probe entry " << label);
  return 0;
}

TEST_CASE("reference-counted HBM bytes equal the closed-form laws", "[sim][io]") {
  for (bool causal : {false, true})
    for (int64_t n : {1, 100, 257, 600}) {
      Problem p;
      p.batch = 1, p.q_heads = 4, p.kv_heads = 2, p.q_len = n, p.kv_len = n, p.head_dim = 64, p.causal = causal;
      const QKV in = inputs(p);
      INFO(fmt::format("N={} causal={}", n, causal));
      const VariantSpec& f = *find_variant("flash2");
      ParamValues params = ParamValues::defaults(f.params);
      params.set(f.params, "block_r", 64, "test");
      params.set(f.params, "block_c", 32, "test");
      const ProbeArray flash = f.reference(p, in, params, {}).probes.at("hbm_bytes");
      for (const auto& [tensor, bytes] : sim::flash_hbm_bytes(p, 64, 32, 2.0)) CHECK(probe_entry(flash, tensor) == bytes);
      const VariantSpec& nv = *find_variant("naive");
      const ProbeArray naive = nv.reference(p, in, {}, {}).probes.at("hbm_bytes");
      for (const auto& [tensor, bytes] : sim::naive_hbm_bytes(p, 4.0)) CHECK(probe_entry(naive, tensor) == bytes);
    }
}

TEST_CASE("IO laws: naive S/P bytes quadruple with N, flash K/V reads follow ceil(N/B_r)", "[sim][io]") {
  for (int64_t n : {256, 512, 1024, 2048}) {
    Problem p, p2;
    p.q_len = p.kv_len = n, p.head_dim = 64;
    p2 = p, p2.q_len = p2.kv_len = 2 * n;
    CHECK(sim::naive_hbm_bytes(p2, 4)["s"] == 4 * sim::naive_hbm_bytes(p, 4)["s"]);
    CHECK(sim::naive_hbm_bytes(p2, 4)["p"] == 4 * sim::naive_hbm_bytes(p, 4)["p"]);
    for (int64_t br : {32, 64, 128}) {
      const double row_blocks = double((n + br - 1) / br);
      const double expected = double(p.batch * p.q_heads) * row_blocks * double(n) * double(p.head_dim) * 2.0;
      CHECK(sim::flash_hbm_bytes(p, br, 64, 2.0)["k"] == expected);
    }
  }
}

TEST_CASE("flash moves fewer HBM bytes than naive once N >= 2 blocks", "[sim][io]") {
  for (int64_t d : {64, 128})
    for (int64_t n : {256, 512, 4096}) {
      Problem p;
      p.q_len = p.kv_len = n, p.head_dim = d;
      double flash = 0, naive = 0;
      for (const auto& [_, b] : sim::flash_hbm_bytes(p, 128, 64, 2.0)) flash += b;
      for (const auto& [_, b] : sim::naive_hbm_bytes(p, 2.0)) naive += b;  // same element size: a fair law check
      INFO(fmt::format("d={} N={} flash {} naive {}", d, n, flash, naive));
      CHECK(flash < naive);
    }
}

TEST_CASE("flash HBM traffic falls as the row block (on-chip memory M) grows: Θ(N²d²/M)", "[sim][io]") {
  Problem p;
  p.q_len = p.kv_len = 4096, p.head_dim = 128;
  double previous = 1e300;
  for (int64_t br : {16, 32, 64, 128, 256}) {
    const double kv = sim::flash_hbm_bytes(p, br, 64, 2.0)["k"];
    CHECK(kv < previous);
    // Doubling B_r halves the K/V re-reads exactly when it divides N.
    if (previous < 1e300) CHECK(kv == Approx(previous / 2));
    previous = kv;
  }
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("backward IO laws: standard moves Θ(N²) through P, dP, dS; FlashBackward Θ(N²d²/M)", "[sim][io]") {
  const auto sum = [](const sim::TensorBytes& b) {
    double t = 0;
    for (const auto& [_, v] : b) t += v;
    return t;
  };
  for (int64_t n : {512, 1024, 2048}) {
    Problem p;
    p.batch = 1, p.q_heads = 2, p.kv_heads = 2, p.q_len = n, p.kv_len = n, p.head_dim = 64;
    Problem p2 = p;
    p2.q_len = p2.kv_len = 2 * n;
    const auto nb = sim::naive_backward_hbm_bytes(p, 2), nb2 = sim::naive_backward_hbm_bytes(p2, 2);
    CHECK(nb2.at("ds") == 4 * nb.at("ds"));
    CHECK(nb.at("p") + nb.at("dp") + nb.at("ds") == 7.0 * 2 * n * n * 2);
    const auto fb = sim::flash_backward_hbm_bytes(p, 64, 64, 2), fb2 = sim::flash_backward_hbm_bytes(p2, 64, 64, 2);
    CHECK(sum(fb) < sum(nb));
    CHECK(fb.at("k") == 2.0 * n * 64 * 2);                        // K read once
    CHECK(fb.at("q") == 2.0 * (n / 64) * n * 64 * 2);            // Q re-read once per KV block
    CHECK(fb2.at("q") == 4 * fb.at("q"));                          // ⌈N/B_c⌉·N
    // Θ(N²d²/M): B_c = M/(4d) — doubling M halves the re-read traffic.
    const auto small = sim::flash_backward_hbm_bytes(p, 64, 32, 2), big = sim::flash_backward_hbm_bytes(p, 64, 64, 2);
    CHECK(small.at("q") == 2 * big.at("q"));
  }
  // Causal: a KV block is visited only by the row blocks that see it — about half the tiles.
  Problem c;
  c.batch = 1, c.q_heads = 1, c.kv_heads = 1, c.q_len = 1024, c.kv_len = 1024, c.head_dim = 64, c.causal = true;
  Problem nc = c;
  nc.causal = false;
  const double ratio = sim::flash_backward_hbm_bytes(c, 64, 64, 2).at("q") / sim::flash_backward_hbm_bytes(nc, 64, 64, 2).at("q");
  CHECK(ratio == Approx((16.0 * 17 / 2) / (16 * 16)));  // 136 of 256 (row block, KV block) pairs
}

}  // namespace
}  // namespace attnlab
