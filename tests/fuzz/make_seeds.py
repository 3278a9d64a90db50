#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets, tests/fuzz/seeds/<target>/: small valid inputs that start
each fuzzer deep inside its parser. Run from anywhere; rewrites the seeds (they are committed, so a run
that changes nothing leaves git clean).

  npy, safetensors  generated here, byte by byte (no numpy): each dtype, header version and layout
                    the loaders accept, with small (B, H, N, d) shapes
  config            configs/**.json, plus configs whose data is a file (the fuzz target provides
                    qkv.safetensors and npy/ in its scratch folder)
  gpu_spec          sim/specs/*.json
  llm_model         sim/models/*.json
  measurements      sim/measurements/*.json, plus a two-entry file
"""
import glob
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEEDS = os.path.join(HERE, "seeds")


def values(count, dtype):
    """count small, finite, varied values packed as dtype ('f4', 'f2' or 'bf16'), little-endian."""
    xs = [((i * 37) % 17 - 8) / 8.0 for i in range(count)]
    if dtype == "f4":
        return struct.pack(f"<{count}f", *xs)
    if dtype == "f2":
        return struct.pack(f"<{count}e", *xs)
    # bfloat16: the high half of the float32 (these values are exact in bf16)
    return b"".join(struct.pack("<f", x)[2:] for x in xs)


def npy(shape, descr, version=1, dict_text=None):
    text = dict_text or f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple(shape)}, }}"
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(text) + 1) % 64) % 64
    header = (text + " " * pad + "\n").encode()
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    count = 1
    for n in shape:
        count *= n
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + values(count, "f4" if descr == "<f4" else "f2")


def safetensors(dtype, shapes, metadata=None, extra=None, pad_to=8):
    names = {"F32": "f4", "F16": "f2", "BF16": "bf16"}
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    tensors = dict(shapes)
    if extra:
        tensors.update(extra)
    for name, shape in tensors.items():
        count = 1
        for n in shape:
            count *= n
        blob = values(count, names[dtype])
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((pad_to - len(text) % pad_to) % pad_to)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy(target, pattern):
    for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
        rel = os.path.relpath(path, ROOT).replace(os.sep, "_")
        os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
        shutil.copyfile(path, os.path.join(SEEDS, target, rel))


def main():
    shutil.rmtree(SEEDS, ignore_errors=True)

    write("npy", "f32-v1.npy", npy((1, 1, 2, 16), "<f4"))
    write("npy", "f16-v1.npy", npy((1, 2, 3, 16), "<f2"))
    write("npy", "f32-v2.npy", npy((2, 1, 1, 16), "<f4", version=2))
    write("npy", "f16-v3.npy", npy((1, 1, 1, 32), "<f2", version=3))
    # numpy's other spellings of the same dict: key order, double quotes, Python 2 longs, no trailing comma
    write("npy", "f32-keys-reordered.npy",
          npy((1, 1, 2, 16), "<f4", dict_text="{'shape': (1, 1, 2, 16), 'fortran_order': False, 'descr': '<f4'}"))
    write("npy", "f32-py2-longs.npy",
          npy((1, 1, 2, 16), "<f4", dict_text='{"descr": "<f4", "fortran_order": False, "shape": (1L, 1L, 2L, 16L),}'))

    qkv = {"q": (1, 2, 4, 16), "k": (1, 1, 4, 16), "v": (1, 1, 4, 16)}
    write("safetensors", "f32-gqa.safetensors", safetensors("F32", qkv))
    write("safetensors", "f16.safetensors", safetensors("F16", {"q": (1, 1, 2, 16), "k": (1, 1, 3, 16), "v": (1, 1, 3, 16)}))
    write("safetensors", "bf16-metadata.safetensors",
          safetensors("BF16", qkv, metadata={"format": "pt", "source": "attnlab seeds"}))
    write("safetensors", "f32-extra-tensor-unpadded.safetensors",
          safetensors("F32", qkv, extra={"o": (1, 2, 4, 16)}, pad_to=1))

    copy("config", "configs/**/*.json")
    base = {"variants": [{"id": "flash2"}, {"id": "int_flash"}], "backends": ["reference", "model"]}
    write("config", "data-safetensors.json", json.dumps({**base, "data": {"file": "qkv.safetensors"}}, indent=1))
    write("config", "data-npy.json", json.dumps({**base, "data": {"file": "npy"},
                                                 "problem": {"head_dim": 16, "causal": True}}, indent=1))

    copy("gpu_spec", "sim/specs/*.json")
    copy("llm_model", "sim/models/*.json")

    copy("measurements", "sim/measurements/*.json")
    with open(os.path.join(ROOT, "sim/measurements/h100-attnlab-kernels.json")) as f:
        full = json.load(f)
    small = {"schema": full["schema"], "gpu": full["gpu"], "measurements": full["measurements"][:2]}
    write("measurements", "two-entries.json", json.dumps(small, indent=1))


if __name__ == "__main__":
    main()
