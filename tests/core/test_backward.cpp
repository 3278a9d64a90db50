// The attention backward references (core/backward.h): FlashBackward in FP32 against the standard FP64
// backward, both against central finite differences of the FP64 forward, tiling invariance, and
// Lemma 2.1 of the notes. Sweep: d ∈ {32, 64, 128}, N ∈ {1, 7, 100, 257}, causal on/off, MHA and GQA
// (Hq = 4, Hkv = 4 or 1), prefill and decode, batch 2; plus causal chunks with Nq ≠ Nkv (bottom-right
// alignment, rows that see no key).
//
// Tolerances are first-order worst-case rounding bounds, evaluated per gradient element in FP64 from the
// data (backward_bounds below, derivation beside the code). Every sum of n rounded terms is bounded by
// γ_n·Σ|terms| ≈ n·u·Σ|terms| whatever the association (tiles, Eigen's blocking, FMA), so the bounds
// hold for any tiling and never fail by chance; typical errors grow like √n, so the measured worst
// ratios sit well below 1. Second-order terms (u², γ_n = nu/(1 − nu), e^δ − 1 vs δ) and, against FP32
// bounds, the FP64 references' own rounding (about 10⁻⁹ of those bounds) are covered by kSecondOrder.
#include "core/backward.h"
#include "core/data/random.h"
#include "core/ground_truth.h"
#include "tests/catch.h"
#include "tests/support/compare.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU32 = 0x1p-24;  // unit roundoff of FP32
constexpr double kU64 = 0x1p-53;  // unit roundoff of FP64
// Eigen's vectorized FP32 exp (what flash_backward uses): ≤ 2 u32 relative error, measured (1.99 u) over
// x ∈ [−100, 0] against the double exp; glibc's double exp is within 1 ulp ≤ 2 u64.
constexpr double kExpUlps = 2.0;
constexpr double kSecondOrder = 1.01;

// ---------------------------------------------------------------------------------------------------
// Data: the project's seeded generator stream (core/data/random.h), standard normal draws.
struct Inputs {
  QKV in;
  Tensor d_o;  // (B, Hq, Nq, d), the upstream gradient z_O
};

Inputs normal_inputs(const Problem& p, uint64_t seed) {
  data::Rng g(seed);
  Inputs x{{Tensor(p.q_shape()), Tensor(p.kv_shape()), Tensor(p.kv_shape())}, Tensor(p.q_shape())};
  for (Tensor* t : {&x.in.q, &x.in.k, &x.in.v, &x.d_o})
    for (float& v : t->values()) v = static_cast<float>(g.normal());
  return x;
}

Problem make_problem(int64_t d, int64_t q_len, int64_t kv_len, bool causal, int64_t kv_heads, Phase phase) {
  Problem p = test::problem(2, 4, kv_heads, q_len, kv_len, d);
  p.causal = causal;
  p.phase = phase;
  validate(p);
  return p;
}

std::string describe(const Problem& p) {
  return fmt::format("d={} Nq={} Nkv={} causal={} Hkv={} phase={}", p.head_dim, p.q_len, p.kv_len, p.causal,
                     p.kv_heads, to_string(p.phase));
}

Tensor to_f32(const TensorF64& t) {
  Tensor r(t.shape());
  for (int64_t i = 0; i < t.size(); ++i) r.data()[i] = static_cast<float>(t.data()[i]);
  return r;
}

TensorF64 to_f64(const Tensor& t) {
  TensorF64 r(t.shape());
  for (int64_t i = 0; i < t.size(); ++i) r.data()[i] = t.data()[i];
  return r;
}

// The forward that flash_backward consumes, from the FP64 ground truth rounded once to FP32, so that
// the tests isolate the backward.
struct Forward {
  Tensor o;    // (B, Hq, Nq, d)
  Tensor lse;  // (B, Hq, Nq, 1), ξ = m + log ℓ, −∞ for rows that see no key
};

Forward forward_from_fp64(const Problem& p, const QKV& in) {
  TensorF64 lse;
  const TensorF64 o = attention_fp64(p, in, &lse);
  return {to_f32(o), to_f32(lse)};
}

// ---------------------------------------------------------------------------------------------------
// One query head's forward in FP64, with the magnitudes the rounding bounds are made of.
struct HeadF64 {
  RowMatrix<double> Q, dO;        // (Nq, d)
  RowMatrix<double> K, V;         // (Nkv, d)
  RowMatrix<double> P;            // (Nq, Nkv) softmax over the visible keys, masked entries 0
  RowMatrix<double> O;            // (Nq, d) = PV
  Eigen::VectorXd xi;             // (Nq) logsumexp ξ of the scaled scores, −∞ for rows that see no key
  Eigen::VectorXd sigma;          // (Nq) σ_i = scale·max_{visible j} Σ_c |Q_ic||K_jc|, bounds |S_ij|
  std::vector<int64_t> visible;   // (Nq) keys visible to each row
};

HeadF64 head_f64(const Problem& p, const QKV& in, const Tensor& d_o, int64_t b, int64_t h) {
  HeadF64 x;
  const int64_t kvh = p.kv_head_of(h);
  const double s = p.scale();
  x.Q = in.q.head(b, h).cast<double>();
  x.dO = d_o.head(b, h).cast<double>();
  x.K = in.k.head(b, kvh).cast<double>();
  x.V = in.v.head(b, kvh).cast<double>();
  const RowMatrix<double> S = x.Q * x.K.transpose() * s;
  const RowMatrix<double> S_abs = x.Q.cwiseAbs() * x.K.cwiseAbs().transpose() * s;
  x.P.setZero(p.q_len, p.kv_len);
  x.xi.setConstant(p.q_len, -std::numeric_limits<double>::infinity());
  x.sigma.setZero(p.q_len);
  for (int64_t i = 0; i < p.q_len; ++i) {
    const int64_t vis = p.visible_keys(i);
    x.visible.push_back(vis);
    if (vis == 0) continue;
    const double m = S.row(i).head(vis).maxCoeff();
    const Eigen::RowVectorXd e = (S.row(i).head(vis).array() - m).exp().matrix();
    const double l = e.sum();
    x.P.row(i).head(vis) = e / l;
    x.xi[i] = m + std::log(l);
    x.sigma[i] = S_abs.row(i).head(vis).maxCoeff();
  }
  x.O = x.P * x.V;
  return x;
}

// Per-element absolute bounds, flat in the layout of dq (B, Hq, Nq, d) and dk, dv (B, Hkv, Nkv, d).
struct Bounds {
  std::vector<double> dq, dk, dv;
};

Bounds zero_bounds(const Problem& p) {
  return {std::vector<double>(p.q_shape().count(), 0.0), std::vector<double>(p.kv_shape().count(), 0.0),
          std::vector<double>(p.kv_shape().count(), 0.0)};
}

Eigen::Map<RowMatrix<double>> head_of(std::vector<double>& v, const Shape4& s, int64_t b, int64_t h) {
  return Eigen::Map<RowMatrix<double>>(v.data() + (b * s.heads + h) * s.head_count(), s.len, s.dim);
}

Bounds operator+(Bounds a, const Bounds& b) {
  using Pair = std::pair<std::vector<double>*, const std::vector<double>*>;
  for (auto [x, y] : {Pair{&a.dq, &b.dq}, Pair{&a.dk, &b.dk}, Pair{&a.dv, &b.dv}})
    for (size_t i = 0; i < x->size(); ++i) (*x)[i] += (*y)[i];
  return a;
}

Bounds times(Bounds a, double f) {
  for (auto* x : {&a.dq, &a.dk, &a.dv})
    for (double& v : *x) v *= f;
  return a;
}

enum class Algorithm { flash_fp32, standard_fp64 };

// Worst-case first-order rounding error of the computed gradients, per element. u is the unit roundoff;
// scores S = QKᵀ·scale, D = z_P − u_row, z_A = P∘D; |·| is elementwise; sums over n terms cost n·u.
//   P (relative error ε_P,i of each entry of row i):
//     flash_fp32: S in FP32 (d-term dot, then the FP32 scale: its representation and the product) errs by
//       ≤ (d+2)·u·σ_i; ξ rounded to FP32 adds u|ξ_i|; the subtraction S − ξ adds u(σ_i + |ξ_i|); exp adds
//       kExpUlps·u. The exponent error δ becomes a relative error δ of P:
//       ε_P = u·((d+3)σ + 2|ξ| + kExpUlps).
//     standard_fp64: A − max(A) errs by ≤ 2(d+2)εσ + 2εσ, exp kExpUlps·ε; the row sum ℓ and the division
//       double that and add N·ε: ε_P = ε·((4d+12)σ + N + 2·kExpUlps).
//   z_P = z_O Vᵀ: ≤ d·u·(|z_O||V|ᵀ)_ij.
//   u_i: flash (Lemma 2.1) sums O_i∘z_O,i with O rounded to FP32: ≤ (d+1)·u·Σ_c |O_ic||z_O,ic|;
//     standard sums P∘z_P over N keys: ≤ Σ_j P_ij(ε_P|z_P,ij| + d·u·(|z_O||V|ᵀ)_ij) + (N+1)·u·Σ_j P_ij|z_P,ij|.
//   z_A = P∘(z_P − u): E_ij = P_ij·((ε_P + 2u)|D_ij| + d·u·(|z_O||V|ᵀ)_ij + δu_i) (subtraction, product).
//   z_Q = scale·z_A K (N products, ≤ N − 1 additions over and across tiles, scale representation and
//     product): ≤ scale·(E|K|) + (N+3)·u·scale·(|z_A||K|).
//   z_K = scale·Σ_group z_Aᵀ Q (R·Nq terms): ≤ scale·Σ(Eᵀ|Q|) + (R·Nq+3)·u·scale·Σ(|z_A|ᵀ|Q|).
//   z_V = Σ_group Pᵀ z_O: ≤ Σ (ε_P∘P)ᵀ|z_O| + (R·Nq+1)·u·Σ Pᵀ|z_O|.
// Rows that see no key have P = 0 and a zero bound: their gradients must be exactly 0.
Bounds backward_bounds(const Problem& p, const QKV& in, const Tensor& d_o, Algorithm algo) {
  const bool flash = algo == Algorithm::flash_fp32;
  const double u = flash ? kU32 : kU64;
  const double s = p.scale(), d = double(p.head_dim), N = double(p.kv_len);
  const double group_rows = double(p.group() * p.q_len);
  Bounds out = zero_bounds(p);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const HeadF64 x = head_f64(p, in, d_o, b, h);
      const int64_t kvh = p.kv_head_of(h);
      const RowMatrix<double> dP = x.dO * x.V.transpose();
      const RowMatrix<double> dP_abs_in = x.dO.cwiseAbs() * x.V.cwiseAbs().transpose();  // |z_O||V|ᵀ
      const Eigen::VectorXd u_row = x.O.cwiseProduct(x.dO).rowwise().sum();
      const RowMatrix<double> D = dP.colwise() - u_row;
      Eigen::VectorXd eps_P = Eigen::VectorXd::Zero(p.q_len), du = Eigen::VectorXd::Zero(p.q_len);
      for (int64_t i = 0; i < p.q_len; ++i) {
        if (x.visible[i] == 0) continue;
        if (flash) {
          eps_P[i] = u * ((d + 3) * x.sigma[i] + 2 * std::abs(x.xi[i]) + kExpUlps);
          du[i] = (d + 1) * u * x.O.row(i).cwiseAbs().dot(x.dO.row(i).cwiseAbs());
        } else {
          eps_P[i] = u * ((4 * d + 12) * x.sigma[i] + N + 2 * kExpUlps);
          const Eigen::RowVectorXd Pi = x.P.row(i);
          du[i] = Pi.dot(eps_P[i] * dP.row(i).cwiseAbs() + d * u * dP_abs_in.row(i)) +
                  (N + 1) * u * Pi.dot(dP.row(i).cwiseAbs());
        }
      }
      RowMatrix<double> E = (D.cwiseAbs().array().colwise() * (eps_P.array() + 2 * u)).matrix() + d * u * dP_abs_in;
      E = ((E.array().colwise() + du.array()) * x.P.array()).matrix();
      const RowMatrix<double> dS_abs = x.P.cwiseProduct(D.cwiseAbs());
      const RowMatrix<double> K_abs = x.K.cwiseAbs(), Q_abs = x.Q.cwiseAbs(), dO_abs = x.dO.cwiseAbs();
      head_of(out.dq, p.q_shape(), b, h) = s * (E * K_abs) + (N + 3) * u * s * (dS_abs * K_abs);
      head_of(out.dk, p.kv_shape(), b, kvh) +=
          s * (E.transpose() * Q_abs) + (group_rows + 3) * u * s * (dS_abs.transpose() * Q_abs);
      const RowMatrix<double> P_eps = (x.P.array().colwise() * eps_P.array()).matrix();
      head_of(out.dv, p.kv_shape(), b, kvh) +=
          P_eps.transpose() * dO_abs + (group_rows + 1) * u * (x.P.transpose() * dO_abs);
    }
  return times(out, kSecondOrder);
}

// Checks out against ref with the shared comparator; returns the worst |ref − out| / bound.
double check_grad(const char* name, const TensorF64& ref, const Tensor& out, const std::vector<double>& atol,
                  double rtol = 0.0) {
  const auto r = test::check_close(ref, out, atol, rtol);
  INFO(name << ": " << r.message);
  CHECK(r.ok);
  return r.worst_ratio;
}

struct Worst {
  double dq = 0, dk = 0, dv = 0;
  void update(double q, double k, double v) { dq = std::max(dq, q), dk = std::max(dk, k), dv = std::max(dv, v); }
  std::string str() const { return fmt::format("worst ratio dq {:.3g}, dk {:.3g}, dv {:.3g}", dq, dk, dv); }
};

void check_all(const GradientsF64& ref, const Gradients& out, const Bounds& atol, Worst& worst) {
  worst.update(check_grad("dq", ref.dq, out.dq, atol.dq), check_grad("dk", ref.dk, out.dk, atol.dk),
               check_grad("dv", ref.dv, out.dv, atol.dv));
}

GradientsF64 to_f64(const Gradients& g) { return {to_f64(g.dq), to_f64(g.dk), to_f64(g.dv)}; }

// ---------------------------------------------------------------------------------------------------
// Tests 1 and 4: flash_backward (two tilings) against the FP64 standard backward, and against each other.

std::vector<Problem> sweep() {
  std::vector<Problem> ps;
  for (int64_t d : {32, 64, 128})
    for (int64_t n : {1, 7, 100, 257})
      for (bool causal : {false, true})
        for (int64_t kv_heads : {4, 1}) {
          ps.push_back(make_problem(d, n, n, causal, kv_heads, Phase::prefill));
          ps.push_back(make_problem(d, 1, n, causal, kv_heads, Phase::decode));
        }
  // Causal chunks with Nq ≠ Nkv: a prefill chunk after a cache (bottom-right aligned), and more queries
  // than keys, where the first Nq − Nkv rows see no key and must contribute nothing.
  for (int64_t kv_heads : {4, 1}) {
    ps.push_back(make_problem(64, 37, 100, true, kv_heads, Phase::prefill));
    ps.push_back(make_problem(64, 100, 37, true, kv_heads, Phase::prefill));
  }
  return ps;
}

TEST_CASE("flash_backward matches the FP64 standard backward within FP32 rounding", "[backward]") {
  Worst worst_small, worst_large, worst_tiling;
  uint64_t seed = 1;
  for (const Problem& p : sweep()) {
    INFO(describe(p));
    const Inputs x = normal_inputs(p, seed++);
    const Forward f = forward_from_fp64(p, x.in);
    const GradientsF64 truth = attention_backward_fp64(p, x.in, x.d_o);
    const Bounds bound = backward_bounds(p, x.in, x.d_o, Algorithm::flash_fp32);
    const Gradients small = flash_backward(p, x.in, f.o, f.lse, x.d_o, 16, 16);
    const Gradients large = flash_backward(p, x.in, f.o, f.lse, x.d_o, 64, 32);
    {
      INFO("tiles 16x16");
      check_all(truth, small, bound, worst_small);
    }
    {
      INFO("tiles 64x32");
      check_all(truth, large, bound, worst_large);
    }
    // Test 4: the tiling changes only the association of FP32 sums; both results lie within `bound` of
    // the exact gradient, hence within 2·bound of each other.
    INFO("16x16 vs 64x32");
    check_all(to_f64(small), large, times(bound, 2.0), worst_tiling);
  }
  SUCCEED("16x16: " << worst_small.str() << "; 64x32: " << worst_large.str()
                    << "; tilings against each other: " << worst_tiling.str());
}

TEST_CASE("flash_backward: rows that see no key get zero gradients and give nothing to dK, dV", "[backward]") {
  const Problem p = make_problem(32, 10, 4, true, 1, Phase::prefill);
  REQUIRE(p.visible_keys(5) == 0);
  REQUIRE(p.visible_keys(6) == 1);
  Inputs x = normal_inputs(p, 77);
  const Forward f = forward_from_fp64(p, x.in);
  REQUIRE(std::isinf(f.lse.at(0, 0, 0, 0)));
  const Gradients g = flash_backward(p, x.in, f.o, f.lse, x.d_o, 4, 3);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t c = 0; c < p.head_dim; ++c) CHECK(g.dq.at(b, h, n, c) == 0.0f);
  // Changing z_O on the blind rows changes nothing.
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t c = 0; c < p.head_dim; ++c) x.d_o.at(b, h, n, c) = 1e3f;
  const Gradients g2 = flash_backward(p, x.in, f.o, f.lse, x.d_o, 4, 3);
  CHECK(g2.dk.values() == g.dk.values());
  CHECK(g2.dv.values() == g.dv.values());
}

// ---------------------------------------------------------------------------------------------------
// Tests 2 and 3: central finite differences of the FP64 forward loss L = Σ o∘z_O.
//
// Step h = 2⁻¹⁷ ≈ 7.6e-6 (about the 1e-5 that balances the two errors below in FP64). The inputs are
// snapped to multiples of 2⁻¹², so x ± h is exact in FP32 (|x| < 8 needs 20 significant bits): the step
// really is 2h and the quotient by 2h is exact.
//   Truncation: |(L(x+h) − L(x−h))/2h − L'(x)| ≤ h²/6·max|L'''|. For a perturbation that moves the logits
//   of row i by t·χ_j (χ_j = scale·K_jc for q_ic; scale·Q_ic at key j only for k_jc), f(t) = E_P[w] with
//   w_j = z_O,i·V_j, and f''' = E[(w − μ_w)(χ − μ_χ)³] − 3·Cov(w, χ)·Var(χ), so
//   |f'''| ≤ 4·range(w)·range(χ)³ over the visible keys (summed over the rows a key perturbation
//   reaches). L is linear in V: no truncation error for dv.
//   Rounding: each FP64 output element o_e errs by η_e ≤ ε·((4d+12)σ_i + 2N + 2·kExpUlps)·(P|V|)_e (the
//   ε_P of the standard backward above, plus N·ε for PV), in both evaluations, so the difference quotient
//   errs by ≤ Σ_e 2η_e|z_O,e| / 2h over the outputs that depend on the perturbed input (a row of one head
//   for q; every row of the group for k and v), plus the summation of L's difference, n·ε·Σ|Δo||z_O|/2h.
//   Both are O(ε/h); the truncation is O(h²).
constexpr double kStep = 0x1p-17;

QKV snapped(const QKV& in) {
  QKV r = in;
  for (Tensor* t : {&r.q, &r.k, &r.v})
    for (float& v : t->values()) v = std::ldexp(std::nearbyint(std::ldexp(v, 12)), -12);
  return r;
}

struct FiniteDifferences {
  GradientsF64 grad;
  Bounds error;  // truncation + rounding bound of each difference quotient
};

FiniteDifferences finite_differences(const Problem& p, const QKV& in, const Tensor& d_o) {
  FiniteDifferences fd{{TensorF64(p.q_shape()), TensorF64(p.kv_shape()), TensorF64(p.kv_shape())}, zero_bounds(p)};
  const double s = p.scale(), d = double(p.head_dim), N = double(p.kv_len);
  // Per head: the rounding budget ρ_i = Σ_c 2η_ic|z_O,ic| of each output row, and range(w) of each row.
  std::vector<HeadF64> heads;
  std::vector<Eigen::VectorXd> rho, w_range;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      HeadF64 x = head_f64(p, in, d_o, b, h);
      const RowMatrix<double> a = x.P * x.V.cwiseAbs();  // (P|V|)_e
      const RowMatrix<double> w = x.dO * x.V.transpose();
      Eigen::VectorXd r = Eigen::VectorXd::Zero(p.q_len), wr = Eigen::VectorXd::Zero(p.q_len);
      for (int64_t i = 0; i < p.q_len; ++i) {
        const int64_t vis = x.visible[i];
        if (vis == 0) continue;
        const double eta = kU64 * ((4 * d + 12) * x.sigma[i] + 2 * N + 2 * kExpUlps);
        r[i] = 2 * eta * a.row(i).dot(x.dO.row(i).cwiseAbs());
        wr[i] = w.row(i).head(vis).maxCoeff() - w.row(i).head(vis).minCoeff();
      }
      heads.push_back(std::move(x));
      rho.push_back(r);
      w_range.push_back(wr);
    }
  auto head_index = [&](int64_t b, int64_t h) { return b * p.q_heads + h; };

  const double n_terms = double(p.q_shape().count());
  // Perturbs element e of *t by ±h; returns the difference quotient and its summation-rounding bound.
  auto quotient = [&](QKV& work, Tensor QKV::*t, int64_t e) {
    float& xe = (work.*t).data()[e];
    const float x0 = xe;
    xe = static_cast<float>(double(x0) + kStep);
    const TensorF64 plus = attention_fp64(p, work);
    xe = static_cast<float>(double(x0) - kStep);
    const TensorF64 minus = attention_fp64(p, work);
    xe = x0;
    double diff = 0, diff_abs = 0;
    for (int64_t i = 0; i < plus.size(); ++i) {
      const double t_i = (plus.data()[i] - minus.data()[i]) * double(d_o.data()[i]);
      diff += t_i;
      diff_abs += std::abs(t_i);
    }
    return std::pair{diff / (2 * kStep), (n_terms + 1) * kU64 * diff_abs / (2 * kStep)};
  };

  QKV work = in;
  const double h2_6 = kStep * kStep / 6;
  // q_ic of head h: reaches row i of head h only.
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const HeadF64& x = heads[head_index(b, h)];
      for (int64_t i = 0; i < p.q_len; ++i)
        for (int64_t c = 0; c < p.head_dim; ++c) {
          const int64_t e = in.q.offset(b, h, i, c);
          const auto [g, sum_round] = quotient(work, &QKV::q, e);
          fd.grad.dq.data()[e] = g;
          const int64_t vis = x.visible[i];
          double chi_range = 0;
          if (vis > 0) chi_range = s * (x.K.col(c).head(vis).maxCoeff() - x.K.col(c).head(vis).minCoeff());
          const double trunc = h2_6 * 4 * w_range[head_index(b, h)][i] * std::pow(chi_range, 3);
          fd.error.dq[e] = trunc + rho[head_index(b, h)][i] / (2 * kStep) + sum_round;
        }
    }
  // k_jc and v_jc of KV head g: reach every row of the group's query heads.
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t g = 0; g < p.kv_heads; ++g) {
      double rho_group = 0;
      for (int64_t h = g * p.group(); h < (g + 1) * p.group(); ++h) rho_group += rho[head_index(b, h)].sum();
      for (int64_t j = 0; j < p.kv_len; ++j)
        for (int64_t c = 0; c < p.head_dim; ++c) {
          const int64_t e = in.k.offset(b, g, j, c);
          double trunc = 0;
          for (int64_t h = g * p.group(); h < (g + 1) * p.group(); ++h) {
            const HeadF64& x = heads[head_index(b, h)];
            for (int64_t i = 0; i < p.q_len; ++i)
              if (j < x.visible[i]) trunc += 4 * w_range[head_index(b, h)][i] * std::pow(s * std::abs(x.Q(i, c)), 3);
          }
          const auto [gk, round_k] = quotient(work, &QKV::k, e);
          fd.grad.dk.data()[e] = gk;
          fd.error.dk[e] = h2_6 * trunc + rho_group / (2 * kStep) + round_k;
          const auto [gv, round_v] = quotient(work, &QKV::v, e);
          fd.grad.dv.data()[e] = gv;
          fd.error.dv[e] = rho_group / (2 * kStep) + round_v;  // L is linear in V
        }
    }
  fd.error = times(fd.error, kSecondOrder);
  return fd;
}

std::vector<Problem> small_problems() {
  std::vector<Problem> ps;
  for (bool causal : {false, true})
    for (int64_t kv_heads : {4, 1}) ps.push_back(make_problem(32, 7, 7, causal, kv_heads, Phase::prefill));
  ps.push_back(make_problem(32, 1, 7, true, 1, Phase::decode));
  ps.push_back(make_problem(32, 9, 5, true, 2, Phase::prefill));  // rows 0-3 see no key
  return ps;
}

TEST_CASE("attention_backward_fp64 matches central finite differences of the FP64 forward", "[backward]") {
  Worst worst;
  uint64_t seed = 500;
  for (const Problem& p : small_problems()) {
    INFO(describe(p));
    Inputs x = normal_inputs(p, seed++);
    x.in = snapped(x.in);
    const FiniteDifferences fd = finite_differences(p, x.in, x.d_o);
    const GradientsF64 g = attention_backward_fp64(p, x.in, x.d_o);
    // Allowed: the FD error, the FP64 backward's own rounding, and — the comparator takes an FP32 output —
    // the rounding of the FP64 gradient to FP32, ≤ u32·|g| ≤ u32·(|ref| + atol): rtol = u32, and the
    // u32·atol term is inside kSecondOrder.
    const Bounds atol = fd.error + backward_bounds(p, x.in, x.d_o, Algorithm::standard_fp64);
    worst.update(check_grad("dq", fd.grad.dq, to_f32(g.dq), atol.dq, kU32),
                 check_grad("dk", fd.grad.dk, to_f32(g.dk), atol.dk, kU32),
                 check_grad("dv", fd.grad.dv, to_f32(g.dv), atol.dv, kU32));
  }
  SUCCEED(worst.str());
}

TEST_CASE("flash_backward matches central finite differences directly", "[backward]") {
  const Problem p = make_problem(32, 7, 7, true, 1, Phase::prefill);
  Inputs x = normal_inputs(p, 900);
  x.in = snapped(x.in);
  const FiniteDifferences fd = finite_differences(p, x.in, x.d_o);
  const Forward f = forward_from_fp64(p, x.in);
  const Gradients g = flash_backward(p, x.in, f.o, f.lse, x.d_o, 3, 2);  // ragged tiles on N = 7
  Worst worst;
  check_all(fd.grad, g, fd.error + backward_bounds(p, x.in, x.d_o, Algorithm::flash_fp32), worst);
  SUCCEED(worst.str());
}

// ---------------------------------------------------------------------------------------------------
// Lemma 2.1: u = rowsum(P∘z_P) = rowsum(O∘z_O), with z_P = z_O Vᵀ and O = PV, checked in FP64 with P built
// explicitly. Both sides are FP64 sums of the same N·d products P_ij·z_O,ic·V_jc in two associations:
//   |computed − exact| ≤ (d + N)·ε·a_i each, a_i = Σ_j P_ij Σ_c |z_O,ic||V_jc|, so the difference ≤ 2(d+N+1)·ε·a_i.
// The comparator takes an FP32 output; 0 is exact in FP32, so the FP64 residual is compared against 0.
TEST_CASE("Lemma 2.1: rowsum(P∘dP) equals rowsum(O∘dO) in FP64", "[backward]") {
  for (bool causal : {false, true}) {
    const Problem p = make_problem(64, 100, 100, causal, 1, Phase::prefill);
    INFO(describe(p));
    const Inputs x = normal_inputs(p, causal ? 31 : 30);
    const Shape4 rows{p.batch, p.q_heads, p.q_len, 1};
    TensorF64 residual(rows);
    std::vector<double> atol(rows.count());
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.q_heads; ++h) {
        const HeadF64 hd = head_f64(p, x.in, x.d_o, b, h);
        const RowMatrix<double> dP = hd.dO * hd.V.transpose();
        const RowMatrix<double> O = hd.P * hd.V;
        const Eigen::VectorXd u_P = hd.P.cwiseProduct(dP).rowwise().sum();
        const Eigen::VectorXd u_O = O.cwiseProduct(hd.dO).rowwise().sum();
        const Eigen::VectorXd a = hd.P.cwiseProduct(hd.dO.cwiseAbs() * hd.V.cwiseAbs().transpose()).rowwise().sum();
        for (int64_t i = 0; i < p.q_len; ++i) {
          residual.at(b, h, i, 0) = u_P[i] - u_O[i];
          atol[residual.offset(b, h, i, 0)] = 2 * double(p.head_dim + p.kv_len + 1) * kU64 * a[i];
        }
      }
    const auto r = test::check_close(residual, Tensor(rows), atol, 0.0);
    INFO(r.message);
    CHECK(r.ok);
  }
}

}  // namespace
}  // namespace attnlab
