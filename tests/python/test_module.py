#!/usr/bin/env python3
"""`import attnlab` against the CLI and against NumPy (standard library + NumPy only).

Run by ctest: test_module.py <attnlab CLI binary> <scratch folder>, with the module on PYTHONPATH.

- Round trip: attnlab.run on a config (dict or path) gives results.json of `attnlab run --json` for that
  config, number for number, once the wall-clock fields (time_ms, gflops) are set aside: both run the
  same code on the same generated data.
- The outputs returned are the ones the metrics were computed from: rel_l2 and max_abs recomputed from
  the returned O against an FP64 attention computed here in NumPy from the same Q/K/V. The two FP64
  truths differ only by rounding: each output element is a sum of N_kv = 80 products accumulated in
  double, relative error below N_kv·2⁻⁵³ ≈ 1e-14 of the element's size (|O| < 10 here). By the triangle
  inequality, a metric from the NumPy truth differs from the engine's by at most ‖truth_np − truth‖ over
  ‖truth‖ (rel_l2) or max |truth_np − truth| (max_abs): TOL = 1e-12 holds either with room, while any
  other output (another variant's, a float16-rounded one) moves them by 1e-4 or more.
- Bad input raises ValueError naming the argument and the rule; a non-contiguous or float16 array is
  accepted and gives the result of its contiguous float32 copy.
"""
import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import attnlab

CLI = None
SCRATCH = None
TOL = 1e-12

# B=1, Hq=4, Hkv=2 (GQA), Nq=48, Nkv=80 (not block multiples), d=32.
CONFIG = {
    "problem": {"batch": 1, "q_heads": 4, "kv_heads": 2, "q_len": 48, "kv_len": 80, "head_dim": 32,
                "causal": False},
    "data": {"generator": "llm_like", "seed": 3},
    "variants": [{"id": "flash2"}, {"id": "int_flash"}],
    "backends": ["reference", "model"],
}


def without_timing(results):
    """results.json's content less the wall-clock fields and the NumPy additions."""
    r = copy.deepcopy({k: v for k, v in results.items()})
    for v in r["variants"]:
        ref = v.get("reference")
        if ref is not None:
            for key in ("time_ms", "gflops", "output", "lse"):
                ref.pop(key, None)
            for probe in ref.get("probes", {}).values():
                probe.pop("array", None)
    for probe in r.get("data", {}).get("probes", {}).values():  # the inputs' attention statistics
        probe.pop("array", None)
    return r


def write_config(name, config):
    path = os.path.join(SCRATCH, name)
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def cli_results(config_path):
    out = os.path.join(SCRATCH, "cli_results.json")
    subprocess.run([CLI, "run", "--config", config_path, "--json", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def cli_error(config_path):
    done = subprocess.run([CLI, "run", "--config", config_path], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2, done
    prefix = "attnlab: error: "
    line = done.stderr.strip()
    assert line.startswith(prefix), line
    return line[len(prefix):]


def attention_fp64(q, k, v, scale):
    """Softmax(Q Kᵀ · scale) V in float64; q (B, Hq, Nq, d), k and v (B, Hkv, Nkv, d), Hkv dividing Hq."""
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k.astype(np.float64), group, axis=1)
    v = np.repeat(v.astype(np.float64), group, axis=1)
    s = np.einsum("bhnd,bhmd->bhnm", q.astype(np.float64), k) * scale
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhnm,bhmd->bhnd", p, v)


def random_qkv(seed=5, b=1, hq=4, hkv=2, nq=48, nkv=80, d=32):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, hq, nq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, nkv, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, nkv, d)).astype(np.float32)
    return q, k, v


class RoundTrip(unittest.TestCase):
    def test_path_and_dict_equal_the_cli(self):
        path = write_config("round_trip.json", CONFIG)
        expected = without_timing(cli_results(path))
        self.assertEqual(without_timing(attnlab.run(path)), expected)
        self.assertEqual(without_timing(attnlab.run(CONFIG)), expected)

    def test_outputs_and_probes_are_arrays(self):
        r = attnlab.run(CONFIG)
        for v in r["variants"]:
            o = v["reference"]["output"]
            self.assertEqual(o.dtype, np.float32)
            self.assertEqual(o.shape, (1, 4, 48, 32))
            if "lse" in v["reference"]["probes"]:
                self.assertEqual(v["reference"]["lse"].shape, (1, 4, 48))
            for name, probe in v["reference"]["probes"].items():
                self.assertEqual(list(probe["array"].shape), probe["shape"], name)
                np.testing.assert_array_equal(probe["array"].ravel(),
                                              np.array(probe["values"], dtype=np.float64), err_msg=name)
        self.assertIn("lse", r["variants"][0]["reference"])  # flash2 keeps it
        # The inputs' attention statistics, per (batch, query head), as arrays too.
        stats = r["data"]["probes"]
        self.assertEqual(sorted(stats), ["attn.entropy", "attn.logit_range", "attn.recent_mass", "attn.sink_share"])
        for name, probe in stats.items():
            self.assertEqual(probe["array"].shape, (1, 4), name)
            self.assertTrue(np.all((probe["array"] >= 0)), name)
        self.assertTrue(np.all(stats["attn.sink_share"]["array"] <= 1))

    def test_kernel_backend_ran_or_says_why_not(self):
        # The GUI's status line and the report's first line give the same reason (views::gpu_line).
        r = attnlab.run(dict(CONFIG, backends=["reference", "kernel"]))
        env = r["environment"]
        if "kernel" in env["backends_ran"]:
            self.assertIsNotNone(env["gpu"])
            return
        reasons = [s["reason"] for s in env["skipped"] if s["backend"] == "kernel" and "variant" not in s]
        self.assertEqual(len(reasons), 1, env["skipped"])
        worded = ("no CUDA GPU found", "the driver is older than the runtime", "sm_80 or newer needed",
                  "no kernels for this GPU", "this build has no CUDA kernels")
        self.assertTrue(reasons[0].startswith(worded), reasons[0])

    def test_progress_reaches_one_and_callback_errors_propagate(self):
        seen = []
        attnlab.run(CONFIG, progress=lambda f, stage: seen.append((f, stage)))
        fractions = [f for f, _ in seen]
        self.assertEqual(fractions, sorted(fractions))
        self.assertEqual(seen[-1], (1.0, "done"))

        def stop(f, stage):
            raise KeyError("stop here")
        with self.assertRaises(KeyError):
            attnlab.run(CONFIG, progress=stop)

    def test_tqdm_bar_by_default_and_bad_progress_named(self):
        # The default draws a tqdm bar (on stderr here) when tqdm is installed, and gives the same numbers as
        # no progress at all; anything neither callable nor a bool is refused by name.
        quiet = attnlab.run(CONFIG, progress=None)
        drawn = io.StringIO()
        with contextlib.redirect_stderr(drawn):  # tqdm writes to sys.stderr as it is when the bar is made
            shown = attnlab.run(CONFIG)
        self.assertIn("attnlab.run", drawn.getvalue())  # the bar's description
        silent = io.StringIO()
        with contextlib.redirect_stderr(silent):
            attnlab.run(CONFIG, progress=False)
        self.assertEqual(silent.getvalue(), "")
        for a, b in zip(quiet["variants"], shown["variants"]):
            self.assertEqual(a["reference"]["metrics"], b["reference"]["metrics"])
        with self.assertRaisesRegex(ValueError, "progress"):
            attnlab.run(CONFIG, progress="yes")


class OutputsAreTheMeasuredOnes(unittest.TestCase):
    def test_metrics_recomputed_from_returned_outputs(self):
        q, k, v = random_qkv()
        r = attnlab.run(CONFIG, q=q, k=k, v=v)
        self.assertEqual(r["config"]["data"], {"arrays": "q, k, v given to attnlab.run"})
        truth = attention_fp64(q, k, v, r["problem"]["softmax_scale"])
        for variant in r["variants"]:
            ref = variant["reference"]
            o = ref["output"].astype(np.float64)
            rel_l2 = np.linalg.norm(o - truth) / np.linalg.norm(truth)
            max_abs = np.abs(o - truth).max()
            self.assertLessEqual(abs(rel_l2 - ref["metrics"]["rel_l2"]), TOL, variant["id"])
            self.assertLessEqual(abs(max_abs - ref["metrics"]["max_abs"]), TOL, variant["id"])
        # The quantized variant's error is its own, not flash2's: the comparison can tell them apart.
        errors = [v["reference"]["metrics"]["rel_l2"] for v in r["variants"]]
        self.assertGreater(errors[1], errors[0] + 1e-6)


class BadInput(unittest.TestCase):
    def assert_value_error(self, fragment, *args, **kwargs):
        with self.assertRaises(ValueError) as caught:
            attnlab.run(*args, **kwargs)
        self.assertIn(fragment, str(caught.exception))
        return str(caught.exception)

    def test_wrong_dtype(self):
        q, k, v = random_qkv()
        self.assert_value_error("q: dtype int32 is not supported", CONFIG, q=q.astype(np.int32), k=k, v=v)
        self.assert_value_error("v: must be a NumPy array", CONFIG, q=q, k=k, v=v.tolist())

    def test_wrong_rank(self):
        q, k, v = random_qkv()
        self.assert_value_error("k: must be 4-D (B, H_kv, N_kv, d), got shape (2, 80, 32)", CONFIG, q=q, k=k[0], v=v)

    def test_mismatched_shapes(self):
        q, k, v = random_qkv()
        self.assert_value_error("v: shape (1, 2, 79, 32) must equal k's (1, 2, 80, 32)", CONFIG, q=q, k=k, v=v[:, :, 1:])
        self.assert_value_error("k: head dim 16 must equal q's (32)", CONFIG, q=q, k=k[..., :16], v=v[..., :16])
        q3, k3, v3 = random_qkv(hq=3)
        self.assert_value_error("k: heads 2 must divide q's heads (3)", CONFIG, q=q3, k=k3, v=v3)
        self.assert_value_error("q, k, v: give all three arrays or none", CONFIG, q=q)

    def test_nan(self):
        q, k, v = random_qkv()
        q[0, 1, 2, 3] = np.nan
        self.assert_value_error("q: element [0, 1, 2, 3] is NaN; inputs must be finite", CONFIG, q=q, k=k, v=v)

    def test_bad_config_key_carries_the_cli_message(self):
        bad = copy.deepcopy(CONFIG)
        bad["problem"]["bogus"] = 1
        path = write_config("bad_key.json", bad)
        expected = cli_error(path)  # "<path>: problem…bogus…"
        self.assertIn("bogus", expected)
        # The path form names the file, as the CLI does; the dict form has no file to name.
        self.assertEqual(self.assert_value_error("bogus", path), expected)
        self.assertEqual(path + ": " + self.assert_value_error("bogus", bad), expected)

    def test_missing_config_path(self):
        missing = os.path.join(SCRATCH, "no_such_config.json")
        self.assert_value_error("no_such_config.json", missing)
        self.assert_value_error("config: must be a dict or the path of a config file, got int", 42)

    def test_non_contiguous_and_float16_give_the_copy_result(self):
        q, k, v = random_qkv()
        # A (B, H, N, d) view of d-major data, and K/V with negative strides along N.
        q_strided = np.swapaxes(np.ascontiguousarray(np.swapaxes(q, 2, 3)), 2, 3)
        self.assertFalse(q_strided.flags["C_CONTIGUOUS"])
        np.testing.assert_array_equal(q_strided, q)
        a = attnlab.run(CONFIG, q=q_strided, k=k[:, :, ::-1], v=v[:, :, ::-1])
        b = attnlab.run(CONFIG, q=q, k=np.ascontiguousarray(k[:, :, ::-1]), v=np.ascontiguousarray(v[:, :, ::-1]))
        self.assertEqual(without_timing(a), without_timing(b))
        for x, y in zip(a["variants"], b["variants"]):
            np.testing.assert_array_equal(x["reference"]["output"], y["reference"]["output"])

        q16, k16, v16 = (t.astype(np.float16) for t in (q, k, v))
        c = attnlab.run(CONFIG, q=q16, k=k16, v=v16)
        d = attnlab.run(CONFIG, q=q16.astype(np.float32), k=k16.astype(np.float32), v=v16.astype(np.float32))
        self.assertEqual(without_timing(c), without_timing(d))


class CompareYourOwn(unittest.TestCase):
    """attnlab.inputs / attnlab.compare: a user's attention scored by the engine's own metric code."""

    def test_compare_gives_each_variants_own_metrics(self):
        r = attnlab.run(CONFIG, progress=None)
        for v in r["variants"]:
            self.assertEqual(attnlab.compare(v["reference"]["output"], CONFIG), v["reference"]["metrics"], v["id"])

    def test_inputs_are_the_runs_inputs(self):
        x = attnlab.inputs(CONFIG)
        self.assertEqual(x["q"].shape, (1, 4, 48, 32))
        self.assertEqual(x["k"].shape, (1, 2, 80, 32))
        a = attnlab.run(CONFIG, progress=None)
        b = attnlab.run(CONFIG, q=x["q"], k=x["k"], v=x["v"], progress=None)
        for va, vb in zip(a["variants"], b["variants"]):
            np.testing.assert_array_equal(va["reference"]["output"], vb["reference"]["output"])

    def test_numpy_attention_scores_at_float32_rounding(self):
        # An FP64 attention rounded once to float32: each element within 2⁻²⁴ relative of the truth, so
        # rel_l2 ≤ 2⁻²⁴ ≈ 6e-8 (plus the 1e-14 between two FP64 evaluations, test_module's header).
        x = attnlab.inputs(CONFIG)
        o = attention_fp64(x["q"], x["k"], x["v"], x["softmax_scale"]).astype(np.float32)
        m = attnlab.compare(o, CONFIG)
        self.assertLessEqual(m["rel_l2"], 2.0 ** -24 + 1e-12)
        self.assertGreater(m["cosine"], 1 - 1e-12)

    def test_bad_output_named(self):
        x = attnlab.inputs(CONFIG)
        with self.assertRaisesRegex(ValueError, r"^output: shape \(1, 4, 48, 31\) must be"):
            attnlab.compare(np.zeros((1, 4, 48, 31), np.float32), CONFIG)
        bad = np.zeros(x["q"].shape, np.float32)
        bad[0, 1, 2, 3] = np.nan
        with self.assertRaisesRegex(ValueError, r"^output: element \[0, 1, 2, 3\] is NaN"):
            attnlab.compare(bad, CONFIG)
        with self.assertRaisesRegex(ValueError, "^output: dtype int32"):
            attnlab.compare(np.zeros(x["q"].shape, np.int32), CONFIG)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_module.py <attnlab CLI> <scratch folder>")
    CLI, SCRATCH = sys.argv[1], sys.argv[2]
    os.makedirs(SCRATCH, exist_ok=True)
    unittest.main(argv=[sys.argv[0]], verbosity=2)
