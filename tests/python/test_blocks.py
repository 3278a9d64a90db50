#!/usr/bin/env python3
"""The building blocks of `import attnlab` (app/python/blocks_*.cpp) against NumPy and against the engine.

Standard library + NumPy only. Run by ctest with the module on PYTHONPATH; seeded from SEED (printed).

What is asserted, and why each tolerance holds:
- Quantizers (Eq. 3–4, core/quant/quantize.h): codes, scales, zero points, group ranges and x̂ equal an
  independent NumPy float32 computation bit for bit (np.array_equal), for every granularity, both schemes,
  2/4/8 bits, q_max = 119, FP16 parameters, tail groups and constant groups. Exact equality is reachable:
  each step is one correctly rounded IEEE FP32 operation in both (s = span / top, (x − z) / s, q·s, + z;
  the engine pins FMA contraction off, NumPy never fuses), and np.rint rounds half to even as
  std::nearbyint does. Only mean_abs_error is a sum whose order differs (the engine: 8 lanes; NumPy:
  pairwise): n ≤ 10⁴ terms in FP64 differ by at most n·2⁻⁵³ ≈ 1.1·10⁻¹², so rtol = 1e-11.
- The engine itself: attnlab.run's probes carry the scales the reference quantized with (int_flash's
  per-token S_Q, S_K and per-tensor S_V; turbo's block s_K, s_V; KIVI's group scales), turbo's head
  priorities and bits, its SAS curve and its cache bytes and counts; the building blocks on the same
  Q/K/V give the same numbers exactly (probes are FP64 copies of the FP32 values).
- Progressive quantization (Eq. 9–10, Alg. 1–2): step 1 equals the tensor quantizer with q_max 119;
  step 2 equals an independent integer implementation (NumPy divmod, ties to even) exactly; the round
  trip is exact where s_int = 1 (every channel's INT8 range ≤ L = 2^b − 1: the bound below is 1/2 on
  integers) and otherwise within progressive.h's bound |X̂ − X| ≤ s_int/2 for every code that was not
  clamped (all codes under int_scale="up"); the header's INT2 saturation example holds.
- Formats: round_fp16 equals NumPy's float16 cast (IEEE round to nearest even) bit for bit; round_bf16
  equals a NumPy round to the nearer of the two neighbouring BF16 values (ties to the even mantissa, the
  overflow neighbour at 2¹²⁸); round_fp8 equals a NumPy round to the nearer of the OCP value table built
  from the format's definition (ties to the even code, overflow past the midpoint to the value one code
  above max, 480 / 65536) — on every code, midpoint, midpoint ± 1 ulp and random values; its outputs are
  representable and it is idempotent. NaN inputs give NaN (payloads are not compared: half.h returns the
  canonical quiet NaN, NumPy keeps payload bits).
- SAS (Eq. 13–15): below n_r exactly 0; on [n_r, 0] the FP32 path equals e^{−x_int}·POLY(x_dec) (FP64)
  within 16·2⁻²⁴ relative (derived at SAS_FP32_ROUNDING), so its error against exp is Eq. 15's own
  polynomial error (max relative 1.03·10⁻³ at x = 1, sas.h) plus that; the FP16 path within the bound
  derived at SAS_FP16_ROUNDING; the LUT is e^{−k} correctly rounded.
- Head priority (Eq. 11–12): equals a sequential FP64 computation in Python (the engine's order of
  summation, hence exact); bits follow Eq. 12 with ties to the lower head index.
- Bad input raises ValueError naming the argument, on one line; non-contiguous and float16 arrays give
  the result of their contiguous float32 copy.
"""
import math
import unittest

import numpy as np

import attnlab

SEED = 20261125
GRANULARITIES = ("tensor", "token", "channel", "block", "group_tokens", "group_channels")
U32 = 2.0 ** -24  # FP32 unit roundoff (half an ulp, relative)


def rng(offset=0):
    return np.random.default_rng(SEED + offset)


def fp16_values(x):
    """x rounded to FP16 and back: inputs the engine may store in FP16 without changing them."""
    return x.astype(np.float16).astype(np.float32)


def keys_like(shape, offset=0):
    """Normal values with a few large, shifted channels (the outlier channels of TurboAttention Fig. 4)."""
    x = rng(offset).standard_normal(shape).astype(np.float32)
    x[..., 1::7] = x[..., 1::7] * 9 + 4
    return x


def same_bits(a, b):
    """Equal bit patterns, NaN matching any NaN."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a.view(np.uint32)[~nan], b.view(np.uint32)[~nan]))


# ---------------------------------------------------------------------------------------------------------
# NumPy references, written from the papers' equations and the rules quantize.h / progressive.h state.

def tile_of(granularity, rows, cols, block_rows, group):
    return {"tensor": (rows, cols), "token": (1, cols), "channel": (rows, 1), "block": (block_rows, cols),
            "group_tokens": (group, 1), "group_channels": (1, group)}[granularity]


def ref_quantize(x, bits, granularity, scheme="symmetric", block_rows=64, group=32, q_max=0, fp16_params=False):
    """Eq. 3–4 on one (rows, cols) float32 matrix, every operation in float32."""
    rows, cols = x.shape
    rs, cs = tile_of(granularity, rows, cols, block_rows, group)
    rt, ct = -(-rows // rs), -(-cols // cs)
    sym = scheme == "symmetric"
    top = np.float32(q_max or 2 ** (bits - 1) - 1) if sym else np.float32(2 ** bits - 1)
    lo, hi = (-top, top) if sym else (np.float32(0), top)
    scales = np.empty((rt, ct), np.float32)
    zeros = np.zeros((rt, ct), np.float32)
    gmin, gmax = np.empty_like(scales), np.empty_like(scales)
    codes = np.empty(x.shape, np.int64)
    xhat = np.empty(x.shape, np.float32)
    clamped = 0
    for i in range(rt):
        for j in range(ct):
            g = x[i * rs:(i + 1) * rs, j * cs:(j + 1) * cs]
            mn, mx = g.min(), g.max()
            span = max(abs(mn), abs(mx)) if sym else mx - mn  # FP32 subtraction
            s = np.float32(span) / top  # one FP32 division
            if not s >= np.float32(2.0 ** -126):  # not a normal number: s = 1 (quantize.h)
                s = np.float32(1)
            z = np.float32(0) if sym else mn
            if fp16_params:
                s, z = np.float32(np.float16(s)), np.float32(np.float16(z))
                if s == 0:
                    s = np.float32(1)
            q = np.rint((g - z) / s)  # Eq. 3, FP32 division, half to even
            clamped += int(np.count_nonzero((q < lo) | (q > hi)))
            q = np.clip(q, lo, hi)
            codes[i * rs:(i + 1) * rs, j * cs:(j + 1) * cs] = q
            xhat[i * rs:(i + 1) * rs, j * cs:(j + 1) * cs] = q * s + z  # two FP32 operations
            scales[i, j], zeros[i, j], gmin[i, j], gmax[i, j] = s, z, mn, mx
    err = np.abs(x.astype(np.float64) - xhat.astype(np.float64))
    return {"codes": codes, "scales": scales, "zeros": zeros, "group_min": gmin, "group_max": gmax,
            "xhat": xhat, "clamped": clamped, "max_abs_error": err.max(), "mean_abs_error": err.mean()}


def rne_div(a, b):
    """Integer a / b rounded to nearest, ties to even, in exact integer arithmetic (b > 0)."""
    q, r = np.divmod(np.asarray(a, np.int64), np.asarray(b, np.int64))  # floor division, 0 ≤ r < b
    return q + ((2 * r > b) | ((2 * r == b) & (q % 2 == 1)))


def ref_step1(x, q_max8=119):
    """Eq. 9: s_K = max|X| / 119 in FP32, X^q1 = rne(X / s_K) (never clamps: |X / s_K| ≤ 119·(1 + 2⁻²³))."""
    s = np.float32(np.abs(x).max()) / np.float32(q_max8)
    return s, np.clip(np.rint(x / s), -127, 127).astype(np.int64)


def ref_step2(q8, bits, int_scale="nearest"):
    """Eq. 10 per channel in integers: s_int, z_int, the raw quotient, the codes and Alg. 2's INT8 values."""
    L = 2 ** bits - 1
    mn, mx = q8.min(axis=0).astype(np.int64), q8.max(axis=0).astype(np.int64)
    s = np.maximum(1, -(-(mx - mn) // L) if int_scale == "up" else rne_div(mx - mn, L))
    z = rne_div(mn, s)
    quotient = rne_div(q8 - z * s, s)  # ⌈X/s − z⌋ = ⌈(X − z·s)/s⌋
    codes = np.clip(quotient, 0, L)
    back = (codes + z) * s
    return {"s_int": s, "z_int": z, "quotient": quotient, "codes": codes, "back": back,
            "q8": np.clip(back, -127, 127), "q8_min": mn, "q8_max": mx}


def fp8_table(fmt):
    """Codes 0 … max_code and their positive finite values, from the OCP definition of the format."""
    mant, bias, max_code = (3, 7, 0x7E) if fmt == "e4m3" else (2, 15, 0x7B)
    codes = np.arange(max_code + 1)
    e, m = codes >> mant, codes & ((1 << mant) - 1)
    values = np.where(e == 0, m * 2.0 ** (1 - bias - mant), (1 + m / 2.0 ** mant) * 2.0 ** (e - bias))
    return codes, values


def fp8_decode_ref(fmt):
    """The value of each of the 256 codes (sign bit 0x80)."""
    codes, values = fp8_table(fmt)
    out = np.full(128, np.nan)
    out[:len(values)] = values
    if fmt == "e5m2":
        out[0x7C] = np.inf
    return np.concatenate([out, -out]).astype(np.float32)


def fp8_round_ref(x, fmt, overflow):
    """Round to the nearer table value, ties to the even code; past max the next would-be value (480 or
    65536, the code above max) is the overflow candidate — fp8.h's boundary rule falls out of it."""
    codes, values = fp8_table(fmt)
    table = np.append(values, 480.0 if fmt == "e4m3" else 65536.0)
    tcodes = np.append(codes, 0x7F if fmt == "e4m3" else 0x7C)
    a = np.abs(x.astype(np.float64))
    af = np.where(np.isfinite(a), a, 0.0)
    hi = np.clip(np.searchsorted(table, af), 1, len(table) - 1)
    d_lo, d_hi = af - table[hi - 1], table[hi] - af
    pick = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (tcodes[hi] % 2 == 0)), hi, hi - 1)
    over = (pick == len(table) - 1) | np.isinf(a)
    special = np.nan if fmt == "e4m3" else np.inf
    mag = np.where(over, values[-1] if overflow == "saturate" else special, table[pick])
    out = np.copysign(mag, x.astype(np.float64))
    return np.where(np.isnan(x), np.nan, out).astype(np.float32)


@np.errstate(invalid="ignore")  # NaN patterns among the inputs and neighbours
def bf16_round_ref(x):
    """The nearer of the two BF16 neighbours of x (truncated and one step away), ties to the even one; a
    neighbour that is inf stands for 2¹²⁸, the value an unbounded exponent would give."""
    b = x.view(np.uint32)
    lo_b = b & np.uint32(0xFFFF0000)
    hi_b = lo_b + np.uint32(0x10000)
    lo, hi = lo_b.view(np.float32).astype(np.float64), hi_b.view(np.float32).astype(np.float64)
    hi = np.where(np.isinf(hi), np.copysign(2.0 ** 128, hi), hi)
    xd = x.astype(np.float64)
    d_lo, d_hi = np.abs(xd - lo), np.abs(hi - xd)
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & ((hi_b >> 16) & 1 == 0))
    out = np.where(pick_hi, hi_b, lo_b).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def ref_head(x):
    """Eq. 11 for one head (tokens, channels) in FP64, summed in the engine's order (sequentially)."""
    cmin, cmax = x.min(axis=0), x.max(axis=0)
    mn, mx = float(cmin.min()), float(cmax.max())
    total = 0.0
    for c in range(x.shape[1]):
        total += float(cmax[c]) - float(cmin[c])
    mean = total / x.shape[1]
    sq = 0.0
    for c in range(x.shape[1]):
        d = float(cmax[c]) - float(cmin[c]) - mean
        sq += d * d
    gap_std = math.sqrt(sq / x.shape[1])
    gap = mx - mn
    entropy = 0.0
    if mx > mn:  # 256 equal bins on [min, max], bin = min(255, ⌊(x − min)·256/(max − min)⌋)
        bins = np.minimum(255, ((x.astype(np.float64).ravel() - mn) * (256 / (mx - mn))).astype(np.int64))
        for c in np.bincount(bins, minlength=256):
            if c > 0:
                p = int(c) / x.size
                entropy -= p * math.log2(p)
    return {"gap_std": gap * gap_std, "min_max": gap, "variation": gap_std, "entropy": entropy,
            "gap": gap, "std": gap_std, "min": mn, "max": mx, "channel_min": cmin, "channel_max": cmax}


# ---------------------------------------------------------------------------------------------------------

class Quantize(unittest.TestCase):
    def check(self, x, **spec):
        """attnlab.quantize of a stack equals ref_quantize of each matrix, and dequantize equals x̂."""
        out = attnlab.quantize(x, **spec)
        mats = x.reshape(-1, *x.shape[-2:])
        refs = [ref_quantize(m, **spec) for m in mats]
        sym = spec.get("scheme", "symmetric") == "symmetric"
        self.assertEqual(out["codes"].dtype, np.int8 if sym else np.uint8)
        self.assertTrue(np.array_equal(out["codes"].reshape(mats.shape), np.stack([r["codes"] for r in refs])), spec)
        for key in ("scales", "group_min", "group_max") + (() if sym else ("zeros",)):
            got = out[key].reshape(len(mats), *refs[0][key].shape)
            self.assertTrue(same_bits(got, np.stack([r[key] for r in refs])), (key, spec))
        if sym:
            self.assertNotIn("zeros", out)
        xhat = attnlab.dequantize(out)
        self.assertTrue(same_bits(xhat.reshape(mats.shape), np.stack([r["xhat"] for r in refs])), spec)
        self.assertEqual(out["clamped"], sum(r["clamped"] for r in refs))
        self.assertEqual(out["max_abs_error"], max(r["max_abs_error"] for r in refs))
        mean = np.mean([r["mean_abs_error"] for r in refs])
        self.assertLessEqual(abs(out["mean_abs_error"] - mean), 1e-11 * mean)  # summation order only
        return out

    def test_every_granularity_scheme_and_width(self):
        # 37 tokens × 20 channels: blocks of 16 and groups of 8 leave tails; block 64 exceeds the rows.
        x = keys_like((2, 37, 20))
        x[0, 5, :] = 0.0   # an all-zero token: s = 1 under "token", codes 0
        x[1, :, 3] = 2.5   # a constant channel: s = 1 and z = 2.5 under asymmetric "channel"
        for bits in (2, 4, 8):
            for g in GRANULARITIES:
                for scheme in ("symmetric", "asymmetric"):
                    for block_rows, group in ((16, 8), (64, 32)):
                        self.check(x, bits=bits, granularity=g, scheme=scheme, block_rows=block_rows, group=group)

    def test_q_max_fp16_params_and_clamping(self):
        x = keys_like((37, 20), 1)
        out = self.check(x, bits=8, granularity="block", block_rows=16, q_max=119)
        self.assertEqual(out["q_max"], 119)
        self.assertLessEqual(int(np.abs(out["codes"]).max()), 119)
        # FP16 parameters (KIVI's storage): z = min rounded to FP16 moves by up to half an FP16 ulp of |min|
        # (1/8 near 500), more than half a step s of a narrow group (range ≈ 0.4 at 2 bits: s ≈ 0.13), so
        # quotients fall below 0 or past 2^b − 1 and clamp.
        clamped = 0
        for bits in (2, 4):
            for g in ("group_tokens", "group_channels"):
                for data in (x * 37.1, 500 + x * 0.1):
                    clamped += self.check(data, bits=bits, granularity=g, scheme="asymmetric", group=8,
                                          fp16_params=True)["clamped"]
        self.assertGreater(clamped, 0)  # the clamp path ran and was counted like the reference counts it

    def test_ties_to_even_after_a_true_division(self):
        # max|x| = 889 = 127·7 makes s = 7 exactly; x = (k + ½)·7 are exact FP32 ties. quantize.h: a true
        # FP32 division, then half to even. With x·(1/7) instead of x/7, 78 of these 254 codes would move;
        # with half away from zero, 127 would.
        for s in (7.0, 13.0):
            k = np.arange(-127, 127)
            x = np.append((k + 0.5) * s, 127 * s).astype(np.float32)[None, :]
            out = self.check(x, bits=8, granularity="tensor")
            self.assertEqual(float(out["scales"][0, 0]), s)
            self.assertTrue(np.array_equal(out["codes"][0, :-1], np.where(k % 2 == 0, k, k + 1)))

    def test_all_zero_and_shape_of_results(self):
        out = self.check(np.zeros((3, 5), np.float32), bits=4, granularity="tensor")
        self.assertEqual(out["scales"].shape, (1, 1))
        self.assertEqual(float(out["scales"][0, 0]), 1.0)
        out = attnlab.quantize(keys_like((2, 3, 37, 20)), bits=4, granularity="group_channels", group=8)
        self.assertEqual(out["scales"].shape, (2, 3, 37, 3))
        self.assertEqual(out["tile"], (1, 8))
        # "token" scales broadcast back: codes · scales is x̂.
        x = keys_like((37, 20), 2)
        out = attnlab.quantize(x, bits=8, granularity="token")
        self.assertEqual(out["scales"].shape, (37, 1))
        self.assertTrue(same_bits(out["codes"] * out["scales"], attnlab.dequantize(out)))

    def test_error_bound(self):
        # quantize.h: |x − x̂| ≤ s/2 in real arithmetic for an unclamped value (none clamp here: FP32 s); the
        # four FP32 roundings of x − z, (x − z)/s, q·s and q·s + z each err by ≤ 2⁻²⁴ times a magnitude
        # bounded by |x| + |z| + (top + 1)·s — the bound of tests/core/quant/test_quantize.cpp.
        x = keys_like((64, 32), 3)
        for g in GRANULARITIES:
            for scheme in ("symmetric", "asymmetric"):
                q = attnlab.quantize(x, bits=4, granularity=g, scheme=scheme, block_rows=16, group=8)
                rs, cs = q["tile"]
                s = np.repeat(np.repeat(q["scales"], rs, 0), cs, 1)[:64, :32].astype(np.float64)
                z = np.repeat(np.repeat(q.get("zeros", np.zeros_like(q["scales"])), rs, 0), cs, 1)[:64, :32]
                top = 15 if scheme == "asymmetric" else 7
                bound = s / 2 + 4 * U32 * (np.abs(x) + np.abs(z) + (top + 1) * s)
                self.assertTrue(np.all(np.abs(x - attnlab.dequantize(q).astype(np.float64)) <= bound), (g, scheme))


class EngineProbes(unittest.TestCase):
    """The numbers attnlab.run's reference recorded equal the building blocks on the same Q/K/V."""

    @classmethod
    def setUpClass(cls):
        # B = 2, Hq = 4, Hkv = 2, N_kv = 150 (tiles of 64, 64, 22), d = 32. FP16-representable values, so
        # that a variant reading its inputs in FP16 sees the very values given here.
        cls.q = fp16_values(keys_like((2, 4, 48, 32), 10))
        cls.k = fp16_values(keys_like((2, 2, 150, 32), 11))
        cls.v = fp16_values(rng(12).standard_normal((2, 2, 150, 32)).astype(np.float32))
        config = {"problem": {"causal": False, "phase": "prefill"},
                  "variants": [{"id": "int_flash"},
                               {"id": "turbo", "params": {"two_bit_heads": 1}},
                               {"id": "turbo", "params": {"poly": "refit", "sas_precision": "fp16"}},
                               {"id": "kivi", "params": {"bits": 2, "group": 16, "residual": 40}}],
                  "backends": ["reference"]}
        r = attnlab.run(config, q=cls.q, k=cls.k, v=cls.v)
        cls.probes = [v["reference"]["probes"] for v in r["variants"]]

    def probe(self, variant, name):
        return self.probes[variant][name]["array"]

    def test_int_flash_scales(self):
        # §3.2: S_Q, S_K = rowmax/127 per token, S_V = max/127 per (batch, KV head).
        self.assertTrue(np.array_equal(self.probe(0, "scales.q"), attnlab.quantize(self.q, bits=8)["scales"][..., 0]))
        self.assertTrue(np.array_equal(self.probe(0, "scales.k"), attnlab.quantize(self.k, bits=8)["scales"][..., 0]))
        self.assertTrue(np.array_equal(self.probe(0, "scales.v"),
                                       attnlab.quantize(self.v, bits=8, granularity="tensor")["scales"][..., 0]))

    def test_turbo_block_scales_cache_and_bits(self):
        bits = self.probe(1, "kv_bits")
        h = attnlab.head_priority(self.k, two_bit_heads=1)
        self.assertTrue(np.array_equal(bits, h["bits"]))
        self.assertEqual(sorted(bits[0]), [2, 4])
        for metric in ("gap_std", "entropy", "min_max", "variation"):
            self.assertTrue(np.array_equal(self.probe(1, "priority." + metric),
                                           attnlab.head_priority(self.k, metric=metric)["priority"]), metric)
        self.assertTrue(np.array_equal(self.probe(1, "channels.k.min"), h["channel_min"]))
        self.assertTrue(np.array_equal(self.probe(1, "channels.k.max"), h["channel_max"]))
        # Alg. 1 l. 7 / Eq. 9: one s_K per KV tile of B_c = 64 keys, max|K_j|/119; the same from the
        # block quantizer and from progressive step 1.
        for name, x in (("scales.k", self.k), ("scales.v", self.v)):
            block = attnlab.quantize(x, bits=8, granularity="block", block_rows=64, q_max=119)["scales"][..., 0]
            self.assertTrue(np.array_equal(self.probe(1, name), block), name)
        # The compressed cache (Eq. 10): bytes and counts summed over every block at its head's width.
        nbytes = clamped = saturated = 0
        for b in range(2):
            for head in range(2):
                for x in (self.k, self.v):
                    for j, t0 in enumerate(range(0, 150, 64)):
                        p = attnlab.progressive_compress(x[b, head, t0:t0 + 64], bits=int(bits[b, head]))
                        self.assertEqual(float(p["scale8"]),
                                         self.probe(1, "scales.k" if x is self.k else "scales.v")[b, head, j])
                        nbytes, clamped, saturated = (nbytes + p["bytes"], clamped + p["clamped"],
                                                      saturated + p["saturated"])
        cache = self.probes[1]["kv_cache.bytes"]
        self.assertEqual(cache["labels"][:3], ["codes", "scales_zeros", "block_scales"])
        self.assertEqual(sum(cache["values"][:3]), nbytes)
        counts = dict(zip(self.probes[1]["clamped"]["labels"], self.probes[1]["clamped"]["values"]))
        self.assertEqual((counts["cache_step2"], counts["cache_saturated"]), (clamped, saturated))

    def test_turbo_sas_curve(self):
        for variant, spec in ((1, {}), (2, {"poly": "refit", "precision": "fp16"})):
            table = attnlab.sas_table(samples=121, **spec)
            for key, probe in (("t", "sas.curve.t"), ("exact", "sas.curve.exp"), ("approx", "sas.curve.sas")):
                self.assertTrue(np.array_equal(self.probe(variant, probe), table[key]), (variant, key))
            self.assertTrue(np.array_equal(table["approx"].astype(np.float32),
                                           attnlab.sas_exp(table["t"].astype(np.float32), **spec)))

    def test_kivi_group_scales_and_bytes(self):
        c = attnlab.kivi_quantize(self.k, self.v, bits=2, group=16, residual=40)
        self.assertEqual(c["quantized_tokens"], 96)  # ⌊(150 − 40)/16⌋·16
        self.assertTrue(np.array_equal(self.probe(3, "scales.k"), c["keys"]["scales"].reshape(2, 2, -1)))
        self.assertTrue(np.array_equal(self.probe(3, "scales.v"), c["values"]["scales"].reshape(2, 2, -1)))
        self.assertEqual(sum(self.probes[3]["kv_cache.bytes"]["values"]), c["bytes"])


class Kivi(unittest.TestCase):
    def test_equals_the_reference(self):
        # kivi.h: k, v rounded to FP16; keys per channel in groups of g tokens, values per token in groups of
        # g channels, asymmetric with FP16 s and z; x̂ rounded once to FP16; the rest kept in FP16.
        k, v = keys_like((2, 75, 20), 20), rng(21).standard_normal((2, 75, 20)).astype(np.float32) * 3
        for bits, group, residual in ((2, 8, 16), (4, 16, 0), (8, 8, 75), (2, 6, 100)):
            c = attnlab.kivi_quantize(k, v, bits=bits, group=group, residual=residual)
            nq = (75 - residual) // group * group if 75 > residual else 0
            self.assertEqual(c["quantized_tokens"], nq)
            for x, key, g, hat, res in ((k, "keys", "group_tokens", "k_hat", "k_residual"),
                                        (v, "values", "group_channels", "v_hat", "v_residual")):
                x16 = fp16_values(x)
                self.assertTrue(same_bits(c[res], x16[:, nq:]))
                self.assertTrue(same_bits(c[hat][:, nq:], x16[:, nq:]))
                if nq == 0:
                    self.assertIsNone(c[key])
                    continue
                for i in range(2):
                    r = ref_quantize(x16[i, :nq], bits, g, "asymmetric", group=group, fp16_params=True)
                    self.assertTrue(np.array_equal(c[key]["codes"][i], r["codes"]), (bits, group, key))
                    self.assertTrue(same_bits(c[key]["scales"][i], r["scales"]))
                    self.assertTrue(same_bits(c[hat][i, :nq], fp16_values(r["xhat"])))
            # kivi.h's bytes: ⌈n·b/8⌉ per tensor, 2 + 2 bytes per group, 2 bytes per residual value.
            groups = 0 if nq == 0 else c["keys"]["scales"].size + c["values"]["scales"].size
            per_head = 2 * math.ceil(nq * 20 * bits / 8) + 4 * (groups // 2) + 2 * 2 * (75 - nq) * 20
            self.assertEqual(c["bytes"], 2 * per_head)


class Progressive(unittest.TestCase):
    def check(self, x, bits, int_scale="nearest"):
        p = attnlab.progressive_compress(x, bits=bits, int_scale=int_scale)
        s8, q8 = ref_step1(x)
        self.assertEqual(float(p["scale8"]), float(s8))
        self.assertTrue(np.array_equal(p["q8"], q8))
        # Step 1 is the tensor quantizer with q_max 119 (progressive.h).
        t = attnlab.quantize(x, bits=8, granularity="tensor", q_max=119)
        self.assertTrue(np.array_equal(p["q8"], t["codes"]) and float(t["scales"][0, 0]) == float(p["scale8"]))
        r = ref_step2(q8, bits, int_scale)
        for key in ("s_int", "z_int", "codes", "q8_min", "q8_max"):
            self.assertTrue(np.array_equal(p[key], r[key]), (key, bits, int_scale))
        clamped = (r["quotient"] < 0) | (r["quotient"] > 2 ** bits - 1)
        self.assertEqual(p["clamped"], int(clamped.sum()))
        self.assertEqual(p["saturated"], int(((r["back"] < -127) | (r["back"] > 127)).sum()))
        back = attnlab.progressive_decompress(p)
        self.assertEqual(back.dtype, np.int8)
        self.assertTrue(np.array_equal(back, r["q8"]))
        # progressive.h: an unclamped code dequantizes within s_int/2 of X^q1 (saturation only moves the
        # value towards X^q1). With int_scale "up" every value does: L·s_int ≥ max − min and z_int·s_int ≥
        # min − s_int/2 put the top of the range at most half a step past the grid, where the quotient
        # L + ½ may round to L + 1 and clamp to L — counted as clamped, yet exactly s_int/2 away.
        err = np.abs(back.astype(np.int64) - q8)
        half_step = np.broadcast_to(p["s_int"], q8.shape) / 2
        self.assertTrue(np.all(err[~clamped] <= half_step[~clamped]))
        if int_scale == "up":
            self.assertTrue(np.all(err <= half_step))
            self.assertTrue(np.all(r["quotient"][clamped] == 2 ** bits))
        return p

    def test_equals_integer_reference(self):
        for shape in ((64, 32), (22, 96), (1, 128), (37, 20)):
            for offset, x in enumerate((keys_like(shape, 30), rng(31).standard_normal(shape).astype(np.float32))):
                for bits in (4, 2):
                    for rule in ("nearest", "up"):
                        self.check(x, bits, rule)

    def test_exact_where_the_grid_is_the_integers(self):
        # Every channel's INT8 range ≤ L: s_int = 1 under both rules and the round trip is exact.
        for bits in (4, 2):
            L = 2 ** bits - 1
            base = rng(32).integers(-127, 127 - L, size=(1, 48))
            q8 = (base + rng(33).integers(0, L + 1, size=(64, 48))).astype(np.int8)
            for rule in ("nearest", "up"):
                p = attnlab.progressive_compress(q8, bits=bits, int_scale=rule, scale8=0.5)
                self.assertTrue(np.all(p["s_int"] == 1))
                self.assertTrue(np.array_equal(attnlab.progressive_decompress(p), q8))
                self.assertEqual(float(p["scale8"]), 0.5)

    def test_int8_input_is_step_two_of_float_input(self):
        x = keys_like((3, 64, 32), 34)
        p = attnlab.progressive_compress(x, bits=2)
        scales = np.asarray(p["scale8"])
        again = attnlab.progressive_compress(p["q8"], bits=2, scale8=scales)
        for key in ("codes", "s_int", "z_int", "scale8", "q8"):
            self.assertTrue(np.array_equal(p[key], again[key]), key)
        self.assertEqual(p["bytes"], 3 * (64 * 32 * 2 // 8 + 2 * 32 + 4))  # packed codes, s_int, z_int, s_K

    def test_int2_saturation_example(self):
        # progressive.h: mn = −119, mx = 119 at INT2 gives s_int = 79, z_int = −2, code 0 ↦ −158 → −127.
        q8 = np.array([[-119], [0], [119]], np.int8)
        p = attnlab.progressive_compress(q8, bits=2)
        self.assertEqual((int(p["s_int"][0]), int(p["z_int"][0])), (79, -2))
        self.assertEqual(attnlab.progressive_decompress(p)[0, 0], -127)
        self.assertGreaterEqual(p["saturated"], 1)


class Formats(unittest.TestCase):
    @staticmethod
    def random_floats(n, offset):
        """Random FP32 bit patterns (every exponent, NaN and inf included)."""
        return rng(offset).integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)

    @staticmethod
    def around(values):
        """The values, the midpoints of neighbours and those ± one FP32 ulp, both signs."""
        v = np.unique(values[np.isfinite(values)].astype(np.float64))
        mid = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact: one more bit than the format
        pts = np.concatenate([v.astype(np.float32), mid, np.nextafter(mid, np.float32(np.inf)),
                              np.nextafter(mid, np.float32(-np.inf))])
        return np.concatenate([pts, -pts])

    SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45, -1e-45], np.float32)

    def test_fp16_equals_numpy_cast(self):
        all16 = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
        x = np.concatenate([self.around(all16), np.float32([65519.996, 65520.0, 65504.0]), self.SPECIAL,
                            self.random_floats(1 << 20, 40)])
        with np.errstate(over="ignore"):  # |x| ≥ 65520 overflows to ±inf, as it should
            ref = x.astype(np.float16).astype(np.float32)
        self.assertTrue(same_bits(attnlab.round_fp16(x), ref))
        self.assertTrue(same_bits(attnlab.round_fp16(all16.astype(np.float16)), all16))  # float16 in: unchanged

    def test_bf16_equals_bit_level_rne(self):
        hi16 = np.arange(2 ** 16, dtype=np.uint32) << 16
        ties = np.concatenate([hi16 | 0x8000, hi16 | 0x7FFF, hi16 | 0x8001, hi16]).view(np.float32)
        x = np.concatenate([ties, self.SPECIAL, self.random_floats(1 << 20, 41)])
        out = attnlab.round_bf16(x)
        self.assertTrue(same_bits(out, bf16_round_ref(x)))
        self.assertTrue(np.all(out[~np.isnan(out)].view(np.uint32) & 0xFFFF == 0))

    def test_fp8_equals_table_rounding(self):
        for fmt in ("e4m3", "e5m2"):
            table = fp8_decode_ref(fmt)
            self.assertTrue(same_bits(attnlab.fp8_value(np.arange(256), format=fmt), table), fmt)
            boundary = np.float32([464, 480, 61440, 65536, 57344, 448])
            logs = rng(42).uniform(-30, 20, 1 << 18)
            wide = (np.sign(rng(43).standard_normal(1 << 18)) * 2.0 ** logs).astype(np.float32)
            x = np.concatenate([self.around(table), self.around(boundary), self.SPECIAL, wide])
            for overflow in ("saturate", "special"):
                out = attnlab.round_fp8(x, format=fmt, overflow=overflow)
                self.assertTrue(same_bits(out, fp8_round_ref(x, fmt, overflow)), (fmt, overflow))
                self.assertTrue(same_bits(attnlab.round_fp8(out, format=fmt, overflow=overflow), out))  # idempotent
                representable = np.append(table, [np.nan, np.inf, -np.inf] if overflow == "special" else np.nan)
                self.assertTrue(np.all(np.isin(out, representable) | np.isnan(out)))
                codes = attnlab.fp8_bits(x, format=fmt, overflow=overflow)
                self.assertEqual(codes.dtype, np.uint8)
                self.assertTrue(same_bits(attnlab.fp8_value(codes, format=fmt), out))  # the codes of those values
            finite = ~np.isnan(table)
            self.assertTrue(np.array_equal(attnlab.fp8_bits(table[finite], format=fmt, overflow="special"),
                                           np.arange(256)[finite]))  # every code's value encodes to itself


# SAS_FP32_ROUNDING: the FP32 path computes LUT[k]·POLY(x_dec) with x = −t and x_dec = x − ⌊x⌋ exact, as the
# FP64 reference does. Against e^{−k}·POLY(x_dec) in FP64 — POLY ≥ 1/3 on [0, 1] and Σ|c_j| ≤ 2.67 for the
# polynomials tested (paper, refit, Taylor) — in units of u = 2⁻²⁴:
#   c0 … c3 rounded to FP32: ≤ u·Σ|c_j|·x^j ≤ 2.67u absolute, ≤ 8.0u relative;
#   three Horner FMAs, each rounded once to half an ulp of a result in [−1, 1] (≤ u/2) and carried by
#   x^j ≤ 1: ≤ 1.5u absolute, ≤ 4.5u relative;
#   LUT[k] = e^{−k} rounded once (≤ u) and the product LUT·POLY rounded once (≤ u).
# 8.0 + 4.5 + 1 + 1 = 14.5 < 16 (measured: 4.8u).
SAS_FP32_ROUNDING = 16 * U32
# SAS_FP16_ROUNDING, Eq. 15 as printed (POLY ≥ 0.367, |POLY′| ≤ 0.993 on [0, 1]), in units of v = 2⁻¹¹:
#   c0 … c3 rounded to FP16, half an ulp each: 2⁻¹² + 2⁻¹² + 2⁻¹³ + 2⁻¹⁵ ≤ 1.31v absolute;
#   x_dec rounded to FP16: ≤ 2⁻¹² = v/2, times |POLY′| ≤ 1: ≤ 0.5v;
#   three HFMA results in [0.36, 0.47], [−0.99, −0.53], [0.36, 1): ≤ 2⁻¹³ + 2⁻¹² + 2⁻¹² = 1.25v;
#   together ≤ 3.06v absolute on POLY ≥ 0.367: ≤ 8.4v relative; the LUT entry and the product add ≤ v each.
# 8.4 + 2 = 10.4 < 11 (measured: 3.8v).
SAS_FP16_ROUNDING = 11 * 2.0 ** -11


class Sas(unittest.TestCase):
    def points(self, n_r):
        t = np.concatenate([np.linspace(n_r, 0, 200001, dtype=np.float32), np.arange(n_r, 1, dtype=np.float32),
                            rng(50).uniform(n_r, 0, 100000).astype(np.float32)])
        return t

    def poly_rel_error(self, c):
        """max |POLY(x)/e^{−x} − 1| on [0, 1] in FP64 over 10⁶ + 1 points including both ends, plus 2·10⁻⁶:
        (POLY·e^x)′ = (POLY + POLY′)·e^x ≤ 3 in magnitude, so between points the sup exceeds the sampled max
        by ≤ 3·10⁻⁶/2; the rest covers the product of this error and the FP32 roundings (≤ 2·10⁻⁹)."""
        x = np.linspace(0, 1, 1_000_001)
        return np.abs(np.polynomial.polynomial.polyval(x, c) / np.exp(-x) - 1).max() + 2e-6

    def test_fp32_is_lut_times_poly(self):
        for n_r in (-6, -1, -12):
            for poly in ("paper", "refit", [1.0, -1.0, 0.5, -1 / 6]):
                c = attnlab.sas_table(n_r=n_r, poly=poly)["poly"]
                t = self.points(n_r)
                out = attnlab.sas_exp(t, n_r=n_r, poly=poly).astype(np.float64)
                x = -t.astype(np.float64)
                k = np.floor(x)
                ref = np.exp(-k) * np.polynomial.polynomial.polyval(x - k, c)  # Eq. 13 in FP64
                self.assertTrue(np.all(np.abs(out - ref) <= SAS_FP32_ROUNDING * ref), (n_r, poly))
                # Against exp: the polynomial's own error plus the roundings above.
                rel = np.abs(out / np.exp(t.astype(np.float64)) - 1)
                self.assertLessEqual(rel.max(), self.poly_rel_error(c) + SAS_FP32_ROUNDING, (n_r, poly))
        # sas.h's figure for Eq. 15 as printed: max relative error 1.03·10⁻³ (at x = 1).
        self.assertLess(self.poly_rel_error(attnlab.sas_table()["poly"]), 1.04e-3)

    def test_zero_below_n_r_and_the_edges(self):
        t = np.float32([-6.0, np.nextafter(np.float32(-6), np.float32(-7)), -7.5, -1e30, -np.inf, 0.0, 0.25, 1e30,
                        np.nan])
        out = attnlab.sas_exp(t)
        self.assertGreater(out[0], 0)  # t = n_r is kept (sas.h)
        self.assertTrue(np.array_equal(out[1:5], np.zeros(4, np.float32)))  # Eq. 14: exactly 0, −∞ included
        c0 = np.float32(0.9996)
        self.assertTrue(out[5] == c0 and out[6] == c0 and out[7] == c0)  # t > 0 acts as 0: SAS(0) = c0
        self.assertTrue(np.isnan(out[8]))
        # m is subtracted in FP32 first.
        s = rng(51).uniform(-10, 3, 1000).astype(np.float32)
        self.assertTrue(same_bits(attnlab.sas_exp(s, m=np.float32(2.75)), attnlab.sas_exp(s - np.float32(2.75))))

    def test_fp16_path(self):
        t = self.points(-6)
        out = attnlab.sas_exp(t, precision="fp16")
        self.assertTrue(same_bits(out, fp16_values(out)))  # FP16 values
        x = -t.astype(np.float64)
        k = np.floor(x)
        c = attnlab.sas_table()["poly"]
        ref = np.exp(-k) * np.polynomial.polynomial.polyval(x - k, c)
        self.assertTrue(np.all(np.abs(out - ref) <= SAS_FP16_ROUNDING * ref))

    def test_table(self):
        for precision, eps in (("fp32", 2.0 ** -24), ("fp16", 2.0 ** -11)):
            tab = attnlab.sas_table(n_r=-9, precision=precision, samples=37)
            k = np.arange(10)
            self.assertEqual(tab["lut"].shape, (10,))
            # LUT[k] = e^{−k} rounded to nearest (≤ half an ulp: ≤ eps relative) of the precision.
            self.assertTrue(np.all(np.abs(tab["lut"] - np.exp(-k)) <= eps * np.exp(-k)), precision)
            self.assertTrue(np.array_equal(tab["approx"].astype(np.float32),
                                           attnlab.sas_exp(tab["t"].astype(np.float32), n_r=-9, precision=precision)))
            self.assertEqual((tab["t"][0], tab["t"][-1]), (-9.0, 0.0))
            # exact = e^t in FP64 (libm against NumPy: within 2 ulps, 4.4e-16 relative).
            self.assertTrue(np.allclose(tab["exact"], np.exp(tab["t"]), rtol=4.5e-16, atol=0))
            self.assertTrue(np.array_equal(tab["rel_err"], tab["abs_err"] / tab["exact"]))
            self.assertEqual(tab["max_rel"], tab["rel_err"].max())
        self.assertTrue(np.array_equal(attnlab.sas_table()["poly"], [0.9996, -0.9922, 0.4626, -0.1025]))

    def test_zeroed_mass(self):
        s = rng(52).standard_normal((3, 5, 400)).astype(np.float32) * 4
        s[0, 0, :300] = -np.inf
        got = attnlab.sas_zeroed_mass(s)
        t = s.astype(np.float64) - s.max(axis=-1, keepdims=True)
        w = np.exp(t)
        ref = np.where(t < -6, w, 0).sum(-1) / w.sum(-1)
        # n ≤ 400 terms summed in FP64 by both, exp within 1 ulp of each other: ≤ 2·(n + 2)·2⁻⁵³ ≈ 9e-14
        # relative on each sum; 1e-12 has room.
        self.assertTrue(np.allclose(got, ref, rtol=1e-12, atol=0))
        self.assertEqual(got.shape, (3, 5))
        edge = attnlab.sas_zeroed_mass(np.float32([[-np.inf, -np.inf], [0.0, np.nan]]))
        self.assertEqual(edge[0], 0.0)
        self.assertTrue(np.isnan(edge[1]))
        self.assertEqual(attnlab.sas_zeroed_mass(np.zeros((2, 0), np.float32)).tolist(), [0.0, 0.0])


class HeadPriority(unittest.TestCase):
    def test_equals_sequential_fp64(self):
        x = keys_like((2, 5, 70, 24), 60)
        x[0, 3] = 1.25  # a constant head: gap 0, entropy 0
        x[1, 2] *= 0.01
        for metric in ("gap_std", "entropy", "min_max", "variation"):
            out = attnlab.head_priority(x, metric=metric)
            ref = np.array([[ref_head(x[b, h])[metric] for h in range(5)] for b in range(2)])
            self.assertTrue(np.array_equal(out["priority"], ref), metric)
        refs = [ref_head(x[b, h]) for b in range(2) for h in range(5)]
        for key, rkey in (("gap", "gap"), ("gap_std", "std"), ("min", "min"), ("max", "max")):
            self.assertTrue(np.array_equal(out[key].ravel(), [r[rkey] for r in refs]), key)
        self.assertTrue(np.array_equal(out["channel_min"].reshape(10, 24), np.stack([r["channel_min"] for r in refs])))

    def test_eq12_bits(self):
        x = keys_like((3, 6, 40, 16), 61)
        for n_h in range(7):
            out = attnlab.head_priority(x, two_bit_heads=n_h)
            for b in range(3):
                order = np.argsort(out["priority"][b], kind="stable")  # ascending, ties keep head order
                expected = np.full(6, 4)
                expected[order[:n_h]] = 2
                self.assertTrue(np.array_equal(out["bits"][b], expected), (n_h, b))
        # Equal priorities: the lower head index drops first.
        same = np.broadcast_to(keys_like((1, 1, 40, 16), 62), (1, 4, 40, 16))
        self.assertEqual(attnlab.head_priority(same, two_bit_heads=2, bits_hi=8)["bits"].tolist(), [[2, 2, 8, 8]])


class StridesAndFloat16(unittest.TestCase):
    """A non-contiguous array gives the result of its contiguous copy; float16 that of its float32 copy."""

    def assert_same(self, a, b):
        if isinstance(a, dict):
            self.assertEqual(a.keys(), b.keys())
            for key in a:
                self.assert_same(a[key], b[key])
        elif isinstance(a, np.ndarray):
            self.assertTrue(a.dtype == b.dtype and (same_bits(a, b) if a.dtype.kind == "f" else np.array_equal(a, b)))
        else:
            self.assertEqual(a, b)

    def test_every_function(self):
        x = keys_like((2, 3, 40, 24), 70)
        views = (np.swapaxes(np.ascontiguousarray(np.swapaxes(x, 2, 3)), 2, 3), x[:, :, ::-1], x[..., ::2])
        calls = (lambda a: attnlab.quantize(a, bits=4, granularity="group_tokens", scheme="asymmetric", group=8),
                 lambda a: attnlab.progressive_compress(a, bits=2),
                 lambda a: attnlab.head_priority(a, two_bit_heads=1, metric="entropy"),
                 lambda a: attnlab.kivi_quantize(a, a[:, :, ::-1], group=8, residual=9),
                 lambda a: attnlab.round_fp8(a, format="e5m2"), attnlab.round_fp16, attnlab.round_bf16,
                 lambda a: attnlab.sas_exp(-np.abs(a)), lambda a: attnlab.sas_zeroed_mass(a))
        for f in calls:
            for view in views:
                self.assertFalse(view.flags["C_CONTIGUOUS"])
                self.assert_same(f(view), f(np.ascontiguousarray(view)))
            x16 = x.astype(np.float16)
            self.assert_same(f(x16), f(x16.astype(np.float32)))
        q8 = attnlab.progressive_compress(x, bits=4)
        strided = np.asfortranarray(q8["q8"])
        self.assert_same(attnlab.progressive_compress(strided, bits=4, scale8=q8["scale8"]),
                         attnlab.progressive_compress(q8["q8"], bits=4, scale8=q8["scale8"]))
        q = attnlab.quantize(x, bits=4)
        q_strided = dict(q, codes=np.asfortranarray(q["codes"]))
        self.assert_same(attnlab.dequantize(q_strided), attnlab.dequantize(q))


class BadInput(unittest.TestCase):
    def bad(self, fragment, f, *args, **kwargs):
        with self.assertRaises(ValueError) as caught:
            f(*args, **kwargs)
        message = str(caught.exception)
        self.assertIn(fragment, message)
        self.assertNotIn("\n", message)

    def test_quantize(self):
        x = keys_like((2, 10, 8), 80)
        self.bad("x: must be a NumPy array of float32 or float16, got list", attnlab.quantize, x.tolist())
        self.bad("x: dtype int32 is not supported", attnlab.quantize, x.astype(np.int32))
        self.bad("x: dtype float64 is not supported", attnlab.quantize, x.astype(np.float64))
        self.bad("x: must be at least 2-D", attnlab.quantize, x[0, 0])
        self.bad("x: shape (2, 0, 8) has a zero dimension", attnlab.quantize, x[:, :0])
        nan = x.copy()
        nan[1, 2, 3] = np.nan
        self.bad("x: element [1, 2, 3] is NaN", attnlab.quantize, nan)
        inf = x.copy()
        inf[0, 4, 5] = -np.inf
        self.bad("x: element [0, 4, 5] is inf", attnlab.quantize, inf)
        self.bad("bits: must be 2, 4 or 8 (got 3)", attnlab.quantize, x, bits=3)
        self.bad("granularity: must be one of tensor, token, channel, block, group_tokens, group_channels (got 'row')",
                 attnlab.quantize, x, granularity="row")
        self.bad("scheme: must be one of symmetric, asymmetric", attnlab.quantize, x, scheme="sym")
        self.bad("block_rows: must be ≥ 1 (got 0)", attnlab.quantize, x, granularity="block", block_rows=0)
        self.bad("group: must be ≥ 1 (got -2)", attnlab.quantize, x, granularity="group_tokens", group=-2)
        self.bad("q_max: must be 0", attnlab.quantize, x, q_max=200)
        self.bad("q_max: must be 0", attnlab.quantize, x, q_max=3.5)
        self.bad("q_max: applies to the symmetric scheme only", attnlab.quantize, x, scheme="asymmetric", q_max=7)
        huge = np.float32([[3e38, -3e38]])
        self.bad("x: group 0: max − min", attnlab.quantize, np.stack([huge * 0, huge]), scheme="asymmetric",
                 granularity="tensor")  # the engine's rule, with the matrix it broke it in:
        self.bad("(in x[1])", attnlab.quantize, np.stack([huge * 0, huge]), scheme="asymmetric", granularity="tensor")

    def test_dequantize(self):
        q = attnlab.quantize(keys_like((10, 8), 81), bits=4, granularity="block", block_rows=4)
        self.bad("q: must be the dict attnlab.quantize returned, got list", attnlab.dequantize, [1])
        self.bad("q: has no 'scales'", attnlab.dequantize, {k: v for k, v in q.items() if k != "scales"})
        codes = q["codes"].copy()
        codes[2, 3] = 8
        self.bad("q['codes']: element [2, 3] is 8; values must lie in [-7, 7]", attnlab.dequantize,
                 dict(q, codes=codes))
        self.bad("q['codes']: dtype float32 is not supported", attnlab.dequantize,
                 dict(q, codes=codes.astype(np.float32)))
        self.bad("q['scales']: shape must be (3, 1)", attnlab.dequantize, dict(q, scales=q["scales"][:2]))
        scales = q["scales"].copy()
        scales[1, 0] = np.nan
        self.bad("q['scales']: element [1, 0] is NaN", attnlab.dequantize, dict(q, scales=scales))
        self.bad("q['granularity']: must be one of", attnlab.dequantize, dict(q, granularity="rows"))
        self.bad("q['bits']: must be an integer", attnlab.dequantize, dict(q, bits="four"))
        self.bad("bits: must be 2, 4 or 8", attnlab.dequantize, dict(q, bits=5))

    def test_progressive(self):
        x = keys_like((2, 16, 8), 82)
        self.bad("bits: must be 4 or 2 (got 8)", attnlab.progressive_compress, x, bits=8)
        self.bad("q_max8: must be an integer in [1, 127]", attnlab.progressive_compress, x, q_max8=128)
        self.bad("int_scale: must be one of nearest, up (got 'down')", attnlab.progressive_compress, x,
                 int_scale="down")
        self.bad("scale8: applies to INT8 input only", attnlab.progressive_compress, x, scale8=1.0)
        self.bad("x: dtype float64 is not supported", attnlab.progressive_compress, x.astype(np.float64))
        self.bad("x: must be at least 2-D", attnlab.progressive_compress, np.int8([1, 2]))
        q8 = np.zeros((2, 16, 8), np.int8)
        q8[1, 2, 3] = -128
        self.bad("x: element [1, 2, 3] is -128; values must lie in [-127, 127]", attnlab.progressive_compress, q8)
        self.bad("scale8: must be finite and > 0 (got -1) (in x[0])", attnlab.progressive_compress, q8 * 0,
                 scale8=-1.0)
        self.bad("scale8: shape (3,) must be x's leading shape (2,)", attnlab.progressive_compress, q8 * 0,
                 scale8=np.ones(3, np.float32))
        p = attnlab.progressive_compress(x, bits=2)
        codes = p["codes"].copy()
        codes[0, 1, 2] = 4
        self.bad("p['codes']: element [0, 1, 2] is 4; values must lie in [0, 3]", attnlab.progressive_decompress,
                 dict(p, codes=codes))
        self.bad("p['s_int']: element [0, 0] is 0; values must lie in [1, 127]", attnlab.progressive_decompress,
                 dict(p, s_int=p["s_int"] * 0))
        self.bad("p['z_int']: shape (2, 7) must be (2, 8)", attnlab.progressive_decompress,
                 dict(p, z_int=p["z_int"][:, 1:]))
        self.bad("bits: must be 4 or 2 (got 3)", attnlab.progressive_decompress, dict(p, bits=3))
        self.bad("p: has no 'z_int'", attnlab.progressive_decompress, {k: v for k, v in p.items() if k != "z_int"})

    def test_formats(self):
        x = np.float32([1.0, 2.0])
        self.bad("format: must be one of e4m3, e5m2 (got 'e3m4')", attnlab.round_fp8, x, format="e3m4")
        self.bad("overflow: must be one of saturate, special (got 'clip')", attnlab.round_fp8, x, overflow="clip")
        self.bad("x: dtype int64 is not supported", attnlab.round_fp8, np.int64([1]))
        self.bad("x: must be a NumPy array", attnlab.round_fp16, [1.0])
        self.bad("x: dtype float64 is not supported", attnlab.round_bf16, x.astype(np.float64))
        self.bad("codes: element [1] is 256; values must lie in [0, 255]", attnlab.fp8_value, np.array([0, 256]))
        self.bad("codes: element [0] is -1", attnlab.fp8_value, np.array([-1]))
        self.bad("x: dtype float64", attnlab.fp8_bits, x.astype(np.float64))

    def test_sas(self):
        t = np.float32([-1.0])
        self.bad("n_r: must be an integer in [-30, 0] (got 1)", attnlab.sas_exp, t, n_r=1)
        self.bad("n_r: must be an integer in [-30, 0] (got -31)", attnlab.sas_exp, t, n_r=-31)
        self.bad("poly: must be one of paper, refit (got 'taylor')", attnlab.sas_exp, t, poly="taylor")
        self.bad("poly: must be 'paper', 'refit' or four numbers c0, c1, c2, c3 (got 3 values)", attnlab.sas_exp, t,
                 poly=[1, 2, 3])
        self.bad("poly: coefficient c1 is not finite", attnlab.sas_exp, t, poly=[1, np.nan, 0, 0])
        self.bad("poly: must be 'paper'", attnlab.sas_exp, t, poly=[1, "a", 0, 0])
        self.bad("precision: must be one of fp32, fp16 (got 'fp8')", attnlab.sas_exp, t, precision="fp8")
        self.bad("t: dtype float64 is not supported", attnlab.sas_exp, t.astype(np.float64))
        self.bad("samples: must be an integer in [2, 10000000] (got 1)", attnlab.sas_table, samples=1)
        self.bad("scores: must be at least 1-D", attnlab.sas_zeroed_mass, np.array(1.0, np.float32))
        self.bad("n_r: must be an integer", attnlab.sas_zeroed_mass, t, n_r=5)

    def test_head_priority_and_kivi(self):
        x = keys_like((2, 3, 10, 8), 83)
        self.bad("x: must be at least 3-D (..., heads, tokens, channels), got shape (10, 8)", attnlab.head_priority,
                 x[0, 0])
        self.bad("metric: must be one of gap_std, entropy, min_max, variation (got 'kurtosis')", attnlab.head_priority,
                 x, metric="kurtosis")
        self.bad("two_bit_heads: must be in [0, 3] (the number of heads), got 4", attnlab.head_priority, x,
                 two_bit_heads=4)
        self.bad("two_bit_heads: must be in [0, 3]", attnlab.head_priority, x, two_bit_heads=-1)
        self.bad("bits_lo: must be 2, 4 or 8 (got 3)", attnlab.head_priority, x, two_bit_heads=1, bits_lo=3)
        nan = x.copy()
        nan[1, 2, 3, 4] = np.nan
        self.bad("x: element [1, 2, 3, 4] is NaN", attnlab.head_priority, nan)
        k = x[0]
        self.bad("v: shape (3, 10, 7) must equal k's (3, 10, 8)", attnlab.kivi_quantize, k, k[..., 1:])
        self.bad("bits: must be 2, 4 or 8 (got 3)", attnlab.kivi_quantize, k, k, bits=3)
        self.bad("group: must be ≥ 1 (got 0)", attnlab.kivi_quantize, k, k, group=0)
        self.bad("residual: must be ≥ 0 (got -1)", attnlab.kivi_quantize, k, k, residual=-1)
        self.bad("k: element [2, 3, 4] is NaN", attnlab.kivi_quantize, nan[1], k)
        big = k.copy()
        big[2, 3, 4] = 70000.0  # finite in FP32, inf once rounded to FP16 (KIVI's input format)
        self.bad("k (rounded to FP16, max 65504)", attnlab.kivi_quantize, big, k)


if __name__ == "__main__":
    print(f"test_blocks.py: seed {SEED}", flush=True)
    unittest.main(verbosity=2)
