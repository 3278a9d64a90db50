// attnlab data: Q/K/V in one .safetensors file (https://github.com/huggingface/safetensors).
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON header, then the data. The header
// maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}, offsets relative to the
// first byte after the header; an optional "__metadata__" entry holds strings and is ignored. attnlab
// reads tensors "q", "k", "v" (F32, F16 or BF16, each (B, H, N, d)); other tensors are ignored, but
// every entry's data_offsets must tile the data section exactly, as the spec requires ("the byte buffer
// needs to be entirely indexed, and cannot contain holes"): no overlaps, no unindexed bytes.
#pragma once

#include "core/data/dtype.h"
#include "core/data/shapes.h"
#include "core/tensor.h"

#include <string>

namespace attnlab::data {

// Fails with an InputError naming the file (and tensor) on any problem; see loaders.h for the list.
QKV load_safetensors(const std::string& path);

// The shapes of q, k and v after every header check load_safetensors makes (the layout against the file
// size included), without reading tensor data.
QkvShapes read_safetensors_shapes(const std::string& path);

// Writes q, k, v in `dtype` with a space-padded header (length a multiple of 8, as the reference writer
// does). Fails on inconsistent shapes, NaN/Inf, or values that overflow `dtype`; never leaves a partial file.
void save_safetensors(const std::string& path, const QKV& t, Dtype dtype);

}  // namespace attnlab::data
