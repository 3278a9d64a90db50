// attnlab data: Q/K/V in one .safetensors file (format summary in safetensors.h).
//
// Every number in the header is untrusted: shapes and offsets are checked for overflow and against the
// real file size before anything is allocated. Little-endian host assumed (static_assert in codec.cpp).
#include "core/data/safetensors.h"

#include "core/data/codec.h"
#include "core/data/file_io.h"
#include "core/error.h"
#include "core/json_input.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <vector>

namespace attnlab::data {

using json = nlohmann::json;

namespace {

constexpr const char* kNames[3] = {"q", "k", "v"};
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

std::optional<Dtype> parse_dtype(const std::string& s) {
  if (s == "F32") return Dtype::f32;
  if (s == "F16") return Dtype::f16;
  if (s == "BF16") return Dtype::bf16;
  return std::nullopt;
}

std::vector<uint64_t> unsigned_list(const json& j, const std::string& where, const char* field) {
  if (!j.is_array()) fail_input(where, fmt::format("\"{}\" must be a list of non-negative integers", field));
  std::vector<uint64_t> out;
  for (const json& x : j) {
    // nlohmann stores every non-negative integer literal as unsigned; negatives and floats fail here.
    if (!x.is_number_unsigned())
      fail_input(where, fmt::format("\"{}\" must be a list of non-negative integers, got {}", field,
                                    detail::printable(j.dump())));
    out.push_back(x.get<uint64_t>());
  }
  return out;
}

std::string tensor_names(const json& header) {
  std::vector<std::string> names;
  for (const auto& [key, value] : header.items())
    if (key != "__metadata__") names.push_back(detail::printable(key, 20));
  if (names.size() > 8) names.resize(8), names.push_back("...");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

// One of q, k, v as the header describes it, checked against itself (dtype × shape = the span).
struct Entry {
  Dtype dtype = Dtype::f32;
  Shape4 shape;
  uint64_t begin = 0;  // data_offsets, relative to the first byte after the header
};

std::vector<uint64_t> data_offsets(const json& e, const std::string& where) {
  const std::vector<uint64_t> offsets = unsigned_list(e["data_offsets"], where, "data_offsets");
  if (offsets.size() != 2) fail_input(where, "\"data_offsets\" must be [begin, end]");
  if (offsets[0] > offsets[1])
    fail_input(where, fmt::format("\"data_offsets\" [{}, {}] end before they begin", offsets[0], offsets[1]));
  return offsets;
}

Entry read_entry(const json& header, const std::string& path, const char* name, uint64_t data_size) {
  const std::string where = fmt::format("{}: tensor '{}'", path, name);
  if (!header.contains(name))
    fail_input(where,
               fmt::format("is missing (the file must hold tensors q, k and v; it holds: {})", tensor_names(header)));
  const json& e = header[name];
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    fail_input(where, "entry must be an object with \"dtype\", \"shape\" and \"data_offsets\"");
  if (!e["dtype"].is_string()) fail_input(where, "\"dtype\" must be a string");
  const std::string dtype_text = e["dtype"].get<std::string>();
  const std::optional<Dtype> dtype = parse_dtype(dtype_text);
  if (!dtype)
    fail_input(where,
               fmt::format("dtype \"{}\" is not supported (need F32, F16 or BF16)", detail::printable(dtype_text)));

  const std::vector<uint64_t> dims = unsigned_list(e["shape"], where, "shape");
  const Shape4 shape = detail::checked_shape(dims, *dtype, where);

  const std::vector<uint64_t> offsets = data_offsets(e, where);
  const uint64_t begin = offsets[0], end = offsets[1];
  const uint64_t need = detail::byte_size(shape, *dtype);
  if (end - begin != need)
    fail_input(where, fmt::format("\"data_offsets\" [{}, {}] span {} bytes but dtype {} and shape {} need {}", begin,
                                  end, end - begin, dtype_text, shape.str(), need));
  if (end > data_size)
    fail_input(where, fmt::format("file is truncated: data ends at byte {} of the data section, which holds only {}",
                                  end, data_size));
  return {*dtype, shape, begin};
}

// The spec: "the byte buffer needs to be entirely indexed, and cannot contain holes" — every entry's
// [begin, end), in order of begin, starts where the previous one ended, and the last ends at the end of
// the file. Overlapping tensors (two names for the same bytes) and unindexed bytes (a polyglot file)
// are refused.
void check_coverage(const json& header, const std::string& path, uint64_t data_size) {
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [key, e] : header.items()) {
    if (key == "__metadata__") continue;
    const std::string where = fmt::format("{}: tensor '{}'", path, detail::printable(key, 40));
    if (!e.is_object() || !e.contains("data_offsets")) fail_input(where, "entry must be an object with \"data_offsets\"");
    const std::vector<uint64_t> offsets = data_offsets(e, where);
    spans.push_back({offsets[0], offsets[1], detail::printable(key, 40)});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t covered = 0;
  const Span* previous = nullptr;
  for (const Span& s : spans) {
    if (s.begin < covered)
      fail_input(fmt::format("{}: tensor '{}'", path, s.name),
                 fmt::format("\"data_offsets\" [{}, {}] overlap tensor '{}' [{}, {}] (tensors must not share bytes)",
                             s.begin, s.end, previous->name, previous->begin, previous->end));
    if (s.begin > covered)
      fail_input(path, fmt::format("bytes [{}, {}) of the data section belong to no tensor (the spec allows no holes)",
                                   covered, s.begin));
    covered = s.end, previous = &s;
  }
  if (covered > data_size)
    fail_input(fmt::format("{}: tensor '{}'", path, previous->name),
               fmt::format("file is truncated: data ends at byte {} of the data section, which holds only {}", covered,
                           data_size));
  if (covered < data_size)
    fail_input(path, fmt::format("bytes [{}, {}) of the data section belong to no tensor (the spec allows no holes)",
                                 covered, data_size));
}

// Everything the header says about q, k and v, checked against the real file size; reads no data.
struct Layout {
  uint64_t data_start = 0;
  Entry entries[3];
};

Layout read_layout(detail::InFile& file) {
  const std::string& path = file.path();
  if (file.size() < 8)
    fail_input(path, fmt::format("file is truncated: {} bytes, shorter than the 8-byte header length", file.size()));
  uint64_t header_len = 0;
  file.read(0, &header_len, 8, "the header length");
  if (header_len > file.size() - 8)
    fail_input(path,
               fmt::format("file is truncated (or not safetensors): header length {} exceeds the {} bytes that follow",
                           header_len, file.size() - 8));
  if (header_len > kMaxHeaderBytes)
    fail_input(path, fmt::format("header length {} exceeds the {} bytes a safetensors header may have", header_len,
                                 kMaxHeaderBytes));
  std::string text(header_len, '\0');
  file.read(8, text.data(), header_len, "the header");

  // The guarded parser: NUL bytes, nesting, numbers beyond double range are refused with the offset.
  const json header = parse_json_text(text, path + ": header");
  if (!header.is_object()) fail_input(path, "header must be a JSON object mapping tensor names to entries");

  Layout layout;
  layout.data_start = 8 + header_len;
  const uint64_t data_size = file.size() - layout.data_start;
  for (int i = 0; i < 3; ++i) layout.entries[i] = read_entry(header, path, kNames[i], data_size);
  check_coverage(header, path, data_size);
  return layout;
}

}  // namespace

QkvShapes read_safetensors_shapes(const std::string& path) {
  detail::InFile file(path);
  const Layout layout = read_layout(file);
  const QkvShapes shapes{layout.entries[0].shape, layout.entries[1].shape, layout.entries[2].shape};
  detail::check_qkv_shapes(shapes, file.path());
  return shapes;
}

QKV load_safetensors(const std::string& path) {
  detail::InFile file(path);
  const Layout layout = read_layout(file);
  detail::check_qkv_shapes({layout.entries[0].shape, layout.entries[1].shape, layout.entries[2].shape}, file.path());
  Tensor* out[3];
  QKV t;
  out[0] = &t.q, out[1] = &t.k, out[2] = &t.v;
  for (int i = 0; i < 3; ++i) {
    const Entry& e = layout.entries[i];
    *out[i] = detail::read_tensor(file, layout.data_start + e.begin, e.shape, e.dtype,
                                  fmt::format("{}: tensor '{}'", file.path(), kNames[i]));
  }
  detail::check_qkv(t, file.path());
  return t;
}

void save_safetensors(const std::string& path, const QKV& t, Dtype dtype) {
  detail::check_qkv(t, path);
  const Tensor* tensors[3] = {&t.q, &t.k, &t.v};
  json header = json::object();
  uint64_t offset = 0;
  for (int i = 0; i < 3; ++i) {
    const Shape4& s = tensors[i]->shape();
    const uint64_t bytes = detail::byte_size(s, dtype);
    header[kNames[i]] = {{"dtype", dtype_name(dtype)},
                         {"shape", {s.batch, s.heads, s.len, s.dim}},
                         {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The spec allows trailing spaces in the header; padding to 8 bytes keeps the data aligned.
  text.append((8 - text.size() % 8) % 8, ' ');

  detail::OutFile out(path);
  const uint64_t header_len = text.size();
  out.write(&header_len, 8);
  out.write(text.data(), text.size());
  for (int i = 0; i < 3; ++i)
    detail::write_tensor(out, *tensors[i], dtype, fmt::format("{}: tensor '{}'", path, kNames[i]));
  out.commit();
}

}  // namespace attnlab::data
