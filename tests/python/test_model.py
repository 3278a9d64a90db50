#!/usr/bin/env python3
"""attnlab.gpus, attnlab.predict and attnlab.kv_capacity against the CLI (standard library + NumPy only).

Run by ctest: test_model.py <attnlab CLI binary> <scratch folder>, with the module on PYTHONPATH.

- predict equals the model backend's entries of `attnlab run --backend model --json` on the same config,
  exactly: both run the same code on the same shapes, and results.json writes doubles in round-trip form.
  A variant the model cannot run carries the reason `attnlab run` records in environment.skipped.
- kv_capacity equals `attnlab capacity`'s table, which has no JSON form: each number within half a unit
  of the last printed digit (bytes per token {:.0f}: 0.5; MiB per sequence {:.1f}: 0.05; decode step
  {:.2f}: 0.005 ms; tokens/s {:.0f}: 0.5; speedup {:.2f}: 0.005; the header's GB {:.1f}: 0.05), the max
  batch exactly, and a dash exactly where the module gives None.
- gpus lists the ids of `attnlab gpus`, with its numbers within their printed precision (bandwidth and
  memory {:.0f}: 0.5; tensor TFLOPS {:g}, six significant digits: 5e-6 relative) and its calibration mark.
- Bad input raises ValueError whose text is the CLI's stderr line after "attnlab: error: ".
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

import numpy as np

import attnlab

CLI = None
SCRATCH = None
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CONFIG = os.path.join(REPO, "configs", "default.json")
ERROR_PREFIX = "attnlab: error: "

# Every prefill variant, GQA, a ragged last row block (q_len 200 is not a multiple of 64 or 128), causal.
PREFILL = {
    "problem": {"batch": 2, "q_heads": 8, "kv_heads": 2, "q_len": 200, "kv_len": 200, "head_dim": 128,
                "causal": True, "phase": "prefill"},
    "variants": [{"id": "naive"}, {"id": "flash2"}, {"id": "flash3_fp8"}, {"id": "int_flash"},
                 {"id": "int_flash", "label": "int_flash half", "params": {"v_fp16": True}},
                 {"id": "turbo"}, {"id": "fireq"}],
    "backends": ["reference"],
}
# Every decode variant, Llama-3-8B's heads, the config's "model" section given.
DECODE = {
    "problem": {"batch": 4, "q_heads": 32, "kv_heads": 8, "q_len": 1, "kv_len": 4000, "head_dim": 128,
                "causal": True, "phase": "decode"},
    "variants": [{"id": "naive"}, {"id": "flash2"}, {"id": "turbo", "params": {"two_bit_heads": 4}},
                 {"id": "kivi"}, {"id": "fireq"}],
    "model": {"l2_reuse": False},
}
# Variants (with labels and parameters) for `attnlab capacity --config`.
CAPACITY_VARIANTS = {
    "variants": [{"id": "flash2"}, {"id": "turbo", "label": "turbo all 2-bit", "params": {"two_bit_heads": 8}},
                 {"id": "kivi"}, {"id": "int_flash", "params": {"v_fp16": True}}],
}

_files = 0


def scratch_file(name):
    """A new path under the scratch folder (the CLI writes only to paths that do not exist yet)."""
    global _files
    _files += 1
    path = os.path.join(SCRATCH, f"{_files:03d}-{name}")
    if os.path.exists(path):
        os.remove(path)
    return path


def write_json(name, value):
    path = scratch_file(name)
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def cli(*args, env=None):
    done = subprocess.run([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert done.returncode == 0, done
    return done.stdout


def cli_error(*args, env=None):
    """The CLI's one-line message for bad input (exit code 2), without its "attnlab: error: " prefix."""
    done = subprocess.run([CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert done.returncode == 2, done
    line = done.stderr.strip()
    assert line.startswith(ERROR_PREFIX) and "\n" not in line, line
    return line[len(ERROR_PREFIX):]


def cli_model_run(config_path, gpu=None):
    out = scratch_file("results.json")
    cli("run", "--config", config_path, "--backend", "model", "--json", out, *(["--gpu", gpu] if gpu else []))
    with open(out) as f:
        return json.load(f)


def parse_capacity(text):
    """`attnlab capacity`'s output: the header line's numbers and one list of cells per table row."""
    lines = text.rstrip("\n").split("\n")
    head = re.fullmatch(r"(.*) on (.*) at (\d+) tokens of context: weights ([\d.]+) GB \(FP16\), "
                        r"workspace ([\d.]+) GB, ([\d.]+) GB for the cache", lines[0])
    assert head, lines[0]
    columns = re.split(r"\s{2,}", lines[1].strip())
    assert columns == ["variant", "cache per token (bytes)", "per sequence (MiB)", "max batch", "decode step (ms)",
                       "throughput (tokens/s)", "× first"], columns
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[2:]]
    for row in rows:
        assert len(row) == len(columns), row
    return {"context": int(head.group(3)), "weights_gb": float(head.group(4)),
            "workspace_gb": float(head.group(5)), "free_gb": float(head.group(6))}, rows


def parse_gpus(text):
    """`attnlab gpus`: id, name, SMs, GB/s, GB, tensor TFLOPS pairs and the calibration mark, per line."""
    out = {}
    for line in text.rstrip("\n").split("\n"):
        m = re.fullmatch(r"(\S+) +(.+?) +(\d+) SMs +(\d+) GB/s +(\d+) GB  tensor TFLOPS:((?: \S+ \S+)*)"
                         r"(  \(calibrated\))?", line)
        assert m, line
        pairs = m.group(6).split()
        out[m.group(1)] = {"name": m.group(2), "sm_count": int(m.group(3)), "hbm_bandwidth_gbs": float(m.group(4)),
                           "hbm_capacity_gb": float(m.group(5)),
                           "tensor_tflops": {pairs[i]: float(pairs[i + 1]) for i in range(0, len(pairs), 2)},
                           "calibrated": m.group(7) is not None}
    return out


class Gpus(unittest.TestCase):
    def test_same_specs_as_the_cli(self):
        listed = parse_gpus(cli("gpus"))
        gpus = attnlab.gpus()
        self.assertEqual([g["id"] for g in gpus], list(listed))  # sorted by id, both
        self.assertIn("h100-sxm5", listed)
        for g in gpus:
            shown = listed[g["id"]]
            self.assertEqual(g["name"], shown["name"])
            self.assertEqual(g["sm_count"], shown["sm_count"])
            self.assertLessEqual(abs(g["hbm_bandwidth_gbs"] - shown["hbm_bandwidth_gbs"]), 0.5)
            self.assertLessEqual(abs(g["hbm_capacity_gb"] - shown["hbm_capacity_gb"]), 0.5)
            self.assertEqual(set(g["tensor_tflops"]), set(shown["tensor_tflops"]))
            for unit, tflops in g["tensor_tflops"].items():
                self.assertLessEqual(abs(tflops - shown["tensor_tflops"][unit]), 5e-6 * tflops, (g["id"], unit))
            self.assertEqual(g["calibrated"], shown["calibrated"])
            self.assertEqual(g["calibrated"], bool(g["efficiency"]))
            # The peaks are the spec's numbers in operations per second: HBM bytes/s from GB/s.
            self.assertEqual(g["peak"]["hbm"], g["hbm_bandwidth_gbs"] * 1e9)
            self.assertEqual(g["peak"]["mma_fp8"] > 0, "fp8" in g["tensor_tflops"])

    def test_malformed_spec_named_as_the_cli_names_it(self):
        specs = os.path.join(SCRATCH, "specs")
        shutil.rmtree(specs, ignore_errors=True)
        os.makedirs(specs)
        shutil.copy(os.path.join(REPO, "sim", "specs", "h100-sxm5.json"), specs)
        with open(os.path.join(specs, "broken.json"), "w") as f:
            json.dump({"id": "broken", "name": "no numbers"}, f)
        expected = cli_error("gpus", env=dict(os.environ, ATTNLAB_SPECS=specs))
        self.assertIn("broken.json", expected)
        os.environ["ATTNLAB_SPECS"] = specs
        try:
            with self.assertRaises(ValueError) as caught:
                attnlab.gpus()
        finally:
            del os.environ["ATTNLAB_SPECS"]
        self.assertEqual(str(caught.exception), expected)


class Predict(unittest.TestCase):
    def assert_equals_cli(self, config, gpu=None):
        path = config if isinstance(config, str) else write_json("config.json", config)
        expected = cli_model_run(path, gpu)
        skipped = {s["variant"]: s["reason"] for s in expected["environment"]["skipped"] if "variant" in s}
        for got in (attnlab.predict(config, gpu=gpu), attnlab.predict(path, gpu=gpu)):
            self.assertEqual(len(got), len(expected["variants"]))
            for entry, want in zip(got, expected["variants"]):
                if "model" in want:
                    self.assertEqual(entry, want)
                else:
                    self.assertEqual(entry, dict(want, skipped=skipped[want["id"]]))
        return got

    def test_default_config_on_its_gpu(self):
        got = self.assert_equals_cli(DEFAULT_CONFIG)
        self.assertEqual([e["model"]["gpu"] for e in got], ["h100-sxm5", "h100-sxm5"])

    def test_every_prefill_variant_on_each_gpu(self):
        for gpu in [g["id"] for g in attnlab.gpus()]:
            with self.subTest(gpu=gpu):
                got = self.assert_equals_cli(PREFILL, gpu)
                self.assertTrue(all("model" in e or "skipped" in e for e in got))
        # The A100 has no FP8 tensor cores: flash3_fp8 is not predicted there, and says why.
        got = attnlab.predict(PREFILL, gpu="a100-sxm4-80gb")
        self.assertNotIn("model", got[2])
        self.assertIn("mma_fp8", got[2]["skipped"])

    def test_decode_on_a_spec_path(self):
        self.assert_equals_cli(DECODE, "h200")
        spec = os.path.join(REPO, "sim", "specs", "a100-sxm4-80gb.json")
        got = self.assert_equals_cli(DECODE, spec)
        self.assertEqual(got[0]["model"]["gpu"], "a100-sxm4-80gb")
        self.assertIn("mma_fp8", got[4]["skipped"])  # fireq's FP8 Q

    def test_config_model_section_applies(self):
        # Without L2 reuse, each row block's re-read of its head's K and V reaches DRAM.
        off = dict(PREFILL, model={"l2_reuse": False})
        self.assert_equals_cli(off)
        on, without = attnlab.predict(PREFILL), attnlab.predict(off)
        self.assertGreater(without[1]["model"]["details"]["dram_bytes"], on[1]["model"]["details"]["dram_bytes"])

    def test_needs_no_data(self):
        # 4 TiB of float32 K and V: the runner would have to generate them; the model reads only the shapes.
        huge = {"problem": {"batch": 512, "q_heads": 64, "kv_heads": 8, "q_len": 1, "kv_len": 1 << 20,
                            "head_dim": 128, "causal": True, "phase": "decode"},
                "variants": [{"id": "flash2"}, {"id": "turbo"}]}
        start = time.monotonic()
        got = attnlab.predict(huge)
        self.assertLess(time.monotonic() - start, 30)
        # Our FP16 decode reads each KV head's tiles once for its 8 query heads (kernels/flash2/flash2_decode.cu) and
        # is bound by HBM, as measured (kernels/PERF.md, flash2 decode v1: 94–101% of copy at this scale); turbo's
        # decode at 8 query heads per KV head issues ~1900 instructions per tile, bound by issue at few warps per
        # scheduler (the latency term).
        self.assertEqual([entry["model"]["bound"] for entry in got], ["memory", "latency"])
        # K in FP16 once per KV head (512·8·2²⁰·128·2 B = 2⁴⁰ B), and V the same: DRAM sees 2 · 2⁴⁰ B.
        self.assertEqual(got[0]["model"]["hbm_bytes"]["k"], 2 ** 40)
        self.assertAlmostEqual(got[0]["model"]["details"]["dram_bytes"] / 2 ** 41, 1, places=4)

    def test_bad_gpu_carries_the_cli_message(self):
        for gpu in ["nope", "a b", os.path.join(SCRATCH, "no_such_gpu.json")]:
            with self.subTest(gpu=gpu):
                expected = cli_error("run", "--config", DEFAULT_CONFIG, "--backend", "model", "--gpu", gpu)
                self.assertTrue(expected.startswith("--gpu: "), expected)
                with self.assertRaises(ValueError) as caught:
                    attnlab.predict(DEFAULT_CONFIG, gpu=gpu)
                self.assertEqual(str(caught.exception), expected)

    def test_cta_too_large_for_the_gpu_carries_the_cli_message(self):
        # turbo's decode CTA needs more shared memory than the L40S gives one CTA: the model refuses the run
        # (as `attnlab run` does) rather than skipping the variant.
        path = write_json("decode.json", DECODE)
        expected = cli_error("run", "--config", path, "--backend", "model", "--gpu", "l40s")
        self.assertIn("shared memory per CTA", expected)
        with self.assertRaises(ValueError) as caught:
            attnlab.predict(DECODE, gpu="l40s")
        self.assertEqual(str(caught.exception), expected)

    def test_bad_config_carries_the_cli_message(self):
        unknown_gpu = dict(DECODE, gpu_model="nope")
        path = write_json("unknown_gpu.json", unknown_gpu)
        expected = cli_error("run", "--config", path, "--backend", "model")
        self.assertTrue(expected.startswith("gpu_model: unknown GPU 'nope'"), expected)
        for config in (unknown_gpu, path):
            with self.assertRaises(ValueError) as caught:
                attnlab.predict(config)
            self.assertEqual(str(caught.exception), expected)

        bad_key = dict(DECODE, problem=dict(DECODE["problem"], bogus=1))
        path = write_json("bad_key.json", bad_key)
        expected = cli_error("run", "--config", path, "--backend", "model")
        self.assertIn("bogus", expected)
        with self.assertRaises(ValueError) as caught:
            attnlab.predict(path)
        self.assertEqual(str(caught.exception), expected)  # the path form names the file, as the CLI does
        with self.assertRaises(ValueError) as caught:
            attnlab.predict(bad_key)
        self.assertEqual(path + ": " + str(caught.exception), expected)  # the dict form has no file to name

    def test_wrong_argument_types_named(self):
        with self.assertRaisesRegex(ValueError, r"^config: must be a dict or the path of a config file, got int$"):
            attnlab.predict(42)
        with self.assertRaisesRegex(ValueError, r"^config: not JSON"):
            attnlab.predict({"variants": {1, 2}})
        with self.assertRaisesRegex(ValueError, r"^--gpu: must be an id \(str\) or a path, got int$"):
            attnlab.predict(DEFAULT_CONFIG, gpu=3)


class KvCapacity(unittest.TestCase):
    def assert_printed(self, value, text, half_unit):
        """`value` printed with half_unit·2 as its last place gives `text`: within half a unit, with the slack of
        the division that made it (a MiB or GB) where it sits on a tie (2281.25 MiB prints as 2281.2)."""
        self.assertLessEqual(abs(value - float(text)), half_unit * (1 + 1e-12) + 1e-12 * abs(value), (value, text))

    def assert_equals_cli(self, rows, args):
        head, table = parse_capacity(cli("capacity", *args))
        self.assertEqual([r["variant"] for r in rows], [t[0] for t in table])
        for r, t in zip(rows, table):
            self.assertEqual(r["context"], head["context"])
            self.assert_printed(r["weights_bytes"] / 1e9, head["weights_gb"], 0.05)
            self.assert_printed(r["workspace_bytes"] / 1e9, head["workspace_gb"], 0.05)
            self.assert_printed(r["free_bytes"] / 1e9, head["free_gb"], 0.05)
            self.assert_printed(r["bytes_per_token"], t[1], 0.5)
            self.assert_printed(r["seq_bytes"] / 2 ** 20, t[2], 0.05)
            self.assertEqual(r["max_batch"], int(t[3]), t)
            for key, cell, half_unit in (("step_ms", t[4], 0.005), ("tokens_per_s", t[5], 0.5),
                                         ("speedup", t[6], 0.005)):
                if r[key] is None:
                    self.assertEqual(cell, "—", (key, t))
                else:
                    self.assert_printed(r[key], cell, half_unit)
            self.assertEqual(r["max_batch"] > 0, r["step_ms"] is not None)
        return rows

    def test_cli_defaults(self):
        rows = self.assert_equals_cli(attnlab.kv_capacity(), [])
        self.assertEqual((rows[0]["model"], rows[0]["gpu"], rows[0]["context"]), ("llama-3-8b", "h100-sxm5", 4096))
        self.assertEqual(rows[-1]["variant"], "turbo 2/4-bit mix")
        self.assertEqual(rows[-1]["params"]["two_bit_heads"], 4)  # half of Llama-3-8B's 8 KV heads

    def test_some_variants_do_not_fit(self):
        # 32 MHA heads at 32k tokens on 24 GB: the FP32 and FP16 caches do not fit one sequence, the 4-bit ones do.
        rows = self.assert_equals_cli(attnlab.kv_capacity("llama-2-7b", "rtx-4090", 32768),
                                      ["--model", "llama-2-7b", "--gpu", "rtx-4090", "--context", "32768"])
        fits = [r["max_batch"] > 0 for r in rows]
        self.assertIn(True, fits)
        self.assertIn(False, fits)
        first = rows[fits.index(True)]
        self.assertEqual(first["speedup"], 1.0)  # over the first row that fits
        self.assertTrue(all(r["speedup"] is None for r in rows if r["max_batch"] == 0))

    def test_mla_model_and_paths(self):
        self.assert_equals_cli(attnlab.kv_capacity("deepseek-v2-lite", "h200", 131072),
                               ["--model", "deepseek-v2-lite", "--gpu", "h200", "--context", "131072"])
        model = os.path.join(REPO, "sim", "models", "qwen2-7b.json")
        gpu = os.path.join(REPO, "sim", "specs", "l40s.json")
        rows = self.assert_equals_cli(attnlab.kv_capacity(model, gpu, np.int64(10000)),
                                      ["--model", model, "--gpu", gpu, "--context", "10000"])
        self.assertEqual((rows[0]["model"], rows[0]["gpu"], rows[0]["context"]), ("qwen2-7b", "l40s", 10000))

    def test_variants_of_a_config(self):
        path = write_json("capacity_variants.json", CAPACITY_VARIANTS)
        args = ["--model", "phi-3-mini", "--gpu", "a100-sxm4-80gb", "--context", "8000", "--config", path]
        for config in (CAPACITY_VARIANTS, path):
            rows = self.assert_equals_cli(attnlab.kv_capacity("phi-3-mini", "a100-sxm4-80gb", 8000, config=config), args)
            self.assertEqual([r["id"] for r in rows], ["flash2", "turbo", "kivi", "int_flash"])
            self.assertEqual(rows[1]["variant"], "turbo all 2-bit")
        # A smaller cache per token fits a larger batch.
        order = np.argsort([r["bytes_per_token"] for r in rows])
        self.assertTrue(all(np.diff([rows[i]["max_batch"] for i in order]) <= 0))

    def assert_cli_message(self, args, **kwargs):
        expected = cli_error("capacity", *args)
        with self.assertRaises(ValueError) as caught:
            attnlab.kv_capacity(**kwargs)
        self.assertEqual(str(caught.exception), expected)
        return expected

    def test_bad_model_and_gpu(self):
        self.assertIn("unknown model 'llama-9'", self.assert_cli_message(["--model", "llama-9"], model="llama-9"))
        self.assertIn("is not a model name", self.assert_cli_message(["--model", "a b"], model="a b"))
        self.assertIn("unknown GPU 'nope'", self.assert_cli_message(["--gpu", "nope"], gpu="nope"))
        missing = os.path.join(SCRATCH, "no_such_gpu.json")
        self.assertIn("No such file", self.assert_cli_message(["--gpu", missing], gpu=missing))

    def test_context_out_of_range(self):
        for context in (0, -5, 2 ** 30 + 1, 2 ** 64):
            with self.subTest(context=context):
                message = self.assert_cli_message([f"--context={context}"], context=context)
                self.assertTrue(message.startswith("--context: "), message)
        with self.assertRaisesRegex(ValueError, r"^--context: must be an int, got float$"):
            attnlab.kv_capacity(context=4096.0)
        with self.assertRaisesRegex(ValueError, r"^--context: must be an int, got bool$"):
            attnlab.kv_capacity(context=True)

    def test_nothing_fits(self):
        # The weights leave no memory for a cache; a context no cache of one sequence fits in.
        self.assertIn("do not fit", self.assert_cli_message(["--model", "phi-3-medium", "--gpu", "rtx-4090"],
                                                            model="phi-3-medium", gpu="rtx-4090"))
        self.assertIn("one sequence of", self.assert_cli_message(["--context", str(2 ** 30)], context=2 ** 30))

    def test_malformed_config(self):
        bad = {"variants": [{"id": "turbo", "params": {"two_bit_heads": "four"}}]}
        path = write_json("bad_capacity_config.json", bad)
        expected = self.assert_cli_message(["--config", path], config=path)
        self.assertIn("two_bit_heads", expected)
        with self.assertRaises(ValueError) as caught:
            attnlab.kv_capacity(config=bad)
        self.assertEqual(path + ": " + str(caught.exception), expected)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_model.py <attnlab CLI> <scratch folder>")
    CLI, SCRATCH = sys.argv[1], os.path.abspath(sys.argv[2])
    os.makedirs(SCRATCH, exist_ok=True)
    unittest.main(argv=[sys.argv[0]], verbosity=2)
