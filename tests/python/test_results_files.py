#!/usr/bin/env python3
"""attnlab.load_results and the .npy sidecars of saved results (standard library + NumPy only).

Run by ctest: test_results_files.py <attnlab CLI binary> <scratch folder>, with the module on PYTHONPATH.

- `attnlab run --save DIR` of a config whose logsumexp and per-token scales pass the inline limit (256
  values: B 1, H 2, N 300) writes .npy sidecars; attnlab.load_results(DIR) gives the dicts attnlab.run
  gives for the same config (wall-clock fields and the outputs O, which results.json never holds, set
  aside), every array equal element for element (both runs compute the same values from the same seeded
  data; the sidecar holds them exactly), each sidecar read only when its key is first read.
- NumPy reads our sidecars (np.load), and we read files NumPy wrote (np.save, float32 and float64, 1-D
  and 3-D) in their place.
- A missing or truncated sidecar raises ValueError naming the file, on access, not at load; the shipped
  schema /1 folder loads; another schema raises ValueError naming it.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np

import attnlab

CLI = None
SCRATCH = None

CONFIG = {
    "problem": {"batch": 1, "q_heads": 2, "kv_heads": 2, "q_len": 300, "kv_len": 300, "head_dim": 32,
                "causal": False},
    "data": {"generator": "llm_like", "seed": 5},
    "variants": [{"id": "flash2"}, {"id": "int_flash"}],
    "backends": ["reference", "model"],
}
H100 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h100-fig6-decode")


def saved_folder(name):
    """A fresh `attnlab run --save` folder of CONFIG."""
    config = os.path.join(SCRATCH, "config.json")
    with open(config, "w") as f:
        json.dump(CONFIG, f)
    out = os.path.join(SCRATCH, name)
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([CLI, "run", "--config", config, "--save", out], check=True, stdout=subprocess.DEVNULL)
    return out


def sidecar_probes(results):
    """(backend dict, probe name, probe dict) of every probe kept in a sidecar."""
    for v in results["variants"]:
        for backend in ("reference", "kernel"):
            for name, probe in v.get(backend, {}).get("probes", {}).items():
                if "npy" in probe:
                    yield v[backend], name, probe


def comparable(results):
    """The dicts with wall-clock fields and outputs set aside, arrays as lists."""
    def plain(x):
        if isinstance(x, dict):
            return {k: plain(x[k]) for k in x if k not in ("time_ms", "gflops", "output")}
        if isinstance(x, list):
            return [plain(e) for e in x]
        if isinstance(x, np.ndarray):
            return x.tolist()
        return x
    return plain(results)


class LoadResults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = saved_folder("saved")
        cls.live = attnlab.run(CONFIG, progress=False)

    def test_sidecars_are_written_and_read_lazily(self):
        r = attnlab.load_results(self.dir)
        big = list(sidecar_probes(r))
        self.assertGreaterEqual(len(big), 4)  # both logsumexps, int_flash's S_Q and S_K at least
        for _, name, probe in big:
            self.assertNotIn("values", probe, name)
            self.assertTrue(os.path.isfile(os.path.join(self.dir, probe["npy"])), name)
            self.assertEqual(type(dict.__getitem__(probe, "array")).__name__, "Deferred", name)  # not read yet
        backend, name, probe = big[0]
        array = probe["array"]
        self.assertIsInstance(array, np.ndarray)
        self.assertIsInstance(dict.__getitem__(probe, "array"), np.ndarray)  # read once, then kept
        self.assertEqual(list(array.shape), probe["shape"])
        self.assertEqual(array.dtype, np.float64)

    def test_same_objects_as_a_live_run(self):
        r = attnlab.load_results(self.dir)
        self.assertEqual(comparable(r), comparable(self.live))
        flash2 = r["variants"][0]["reference"]
        self.assertIs(flash2["lse"], flash2["probes"]["lse"]["array"])  # one array, read once
        np.testing.assert_array_equal(flash2["lse"], self.live["variants"][0]["reference"]["lse"])

    def test_numpy_reads_our_sidecars(self):
        r = attnlab.load_results(self.dir)
        for _, name, probe in sidecar_probes(r):
            a = np.load(os.path.join(self.dir, probe["npy"]))
            self.assertEqual(a.dtype.str, probe["dtype"], name)
            self.assertEqual(list(a.shape), probe["shape"], name)
            np.testing.assert_array_equal(a.astype(np.float64), probe["array"], err_msg=name)

    def test_we_read_what_numpy_writes(self):
        folder = saved_folder("numpy_written")
        r = attnlab.load_results(folder)
        expected = {}
        for i, (_, name, probe) in enumerate(sidecar_probes(r)):
            shape = tuple(probe["shape"])
            values = np.random.default_rng(i).standard_normal(shape)
            # Alternately float32 and float64, and one written flat (1-D) under a 1-D reference.
            values = values.astype(np.float32) if i % 2 else values
            np.save(os.path.join(folder, probe["npy"]), values)
            expected[probe["npy"]] = values.astype(np.float64)
        flat = os.path.join(folder, "flat.npy")
        np.save(flat, np.arange(300, dtype=np.float32))
        for _, name, probe in sidecar_probes(attnlab.load_results(folder)):
            np.testing.assert_array_equal(probe["array"], expected[probe["npy"]], err_msg=name)
        with open(os.path.join(folder, "results.json")) as f:
            j = json.load(f)
        probe = j["variants"][0]["reference"]["probes"]["lse"]
        probe.update({"npy": "flat.npy", "shape": [300]})
        with open(os.path.join(folder, "results.json"), "w") as f:
            json.dump(j, f)
        lse = attnlab.load_results(folder)["variants"][0]["reference"]["lse"]
        np.testing.assert_array_equal(lse, np.arange(300, dtype=np.float64))

    def test_missing_or_truncated_sidecar_is_named_on_access(self):
        folder = saved_folder("damaged")
        _, _, probe = next(sidecar_probes(attnlab.load_results(folder)))
        path = os.path.join(folder, probe["npy"])
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 8)
        r = attnlab.load_results(folder)  # results.json alone: fine
        _, _, probe = next(sidecar_probes(r))
        with self.assertRaisesRegex(ValueError, "truncated") as caught:
            probe["array"]
        self.assertIn(path, str(caught.exception))
        os.remove(path)
        _, _, probe = next(sidecar_probes(attnlab.load_results(folder)))
        with self.assertRaisesRegex(ValueError, "not found") as caught:
            probe.get("array")
        self.assertIn(path, str(caught.exception))

    def test_single_file_keeps_its_arrays_beside_it(self):
        config = os.path.join(SCRATCH, "config.json")
        out = os.path.join(SCRATCH, "run.json")
        subprocess.run([CLI, "run", "--config", config, "--json", out], check=True, stdout=subprocess.DEVNULL)
        self.assertTrue(os.path.isdir(out + ".arrays"))
        r = attnlab.load_results(out)
        folder = list(sidecar_probes(attnlab.load_results(self.dir)))
        single = list(sidecar_probes(r))
        self.assertEqual(len(single), len(folder))
        for (_, name, probe), (_, _, twin) in zip(single, folder):
            self.assertTrue(probe["npy"].startswith("run.json.arrays/"), name)
            np.testing.assert_array_equal(probe["array"], twin["array"], err_msg=name)

    def test_old_schema_read_other_refused(self):
        old = attnlab.load_results(H100)
        self.assertEqual(old["schema"], "attnlab.results/2")  # given back in today's form
        self.assertEqual(old["environment"]["gpu"], "NVIDIA H100 80GB HBM3")
        other = os.path.join(SCRATCH, "other.json")
        with open(other, "w") as f:
            json.dump({"schema": "attnlab.results/7"}, f)
        with self.assertRaisesRegex(ValueError, r'"attnlab.results/7" is not supported.*attnlab.results/2'):
            attnlab.load_results(other)
        with self.assertRaisesRegex(ValueError, "not found"):
            attnlab.load_results(os.path.join(SCRATCH, "no-such-folder"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_results_files.py <attnlab CLI> <scratch folder>")
    CLI, SCRATCH = sys.argv[1], sys.argv[2]
    os.makedirs(SCRATCH, exist_ok=True)
    unittest.main(argv=[sys.argv[0]], verbosity=2)
