// attnlab data: Q/K/V in one .safetensors file (format summary in safetensors.h).
//
// Every number in the header is untrusted: shapes and offsets are checked for overflow and against the
// real file size before anything is allocated. Little-endian host assumed (static_assert in codec.cpp).
#include "core/data/safetensors.h"

#include "core/data/codec.h"
#include "core/data/file_io.h"
#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace attnlab::data {

using json = nlohmann::json;

namespace {

constexpr const char* kNames[3] = {"q", "k", "v"};

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

Tensor read_entry(detail::InFile& file, const json& header, const char* name, uint64_t data_start) {
  const std::string where = fmt::format("{}: tensor '{}'", file.path(), name);
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

  const std::vector<uint64_t> offsets = unsigned_list(e["data_offsets"], where, "data_offsets");
  if (offsets.size() != 2) fail_input(where, "\"data_offsets\" must be [begin, end]");
  const uint64_t begin = offsets[0], end = offsets[1];
  if (begin > end) fail_input(where, fmt::format("\"data_offsets\" [{}, {}] end before they begin", begin, end));
  const uint64_t need = detail::byte_size(shape, *dtype);
  if (end - begin != need)
    fail_input(where, fmt::format("\"data_offsets\" [{}, {}] span {} bytes but dtype {} and shape {} need {}", begin,
                                  end, end - begin, dtype_text, shape.str(), need));
  const uint64_t data_size = file.size() - data_start;
  if (end > data_size)
    fail_input(where, fmt::format("file is truncated: data ends at byte {} of the data section, which holds only {}",
                                  end, data_size));
  return detail::read_tensor(file, data_start + begin, shape, *dtype, where);
}

}  // namespace

QKV load_safetensors(const std::string& path) {
  detail::InFile file(path);
  if (file.size() < 8)
    fail_input(path, fmt::format("file is truncated: {} bytes, shorter than the 8-byte header length", file.size()));
  uint64_t header_len = 0;
  file.read(0, &header_len, 8, "the header length");
  if (header_len > file.size() - 8)
    fail_input(path,
               fmt::format("file is truncated (or not safetensors): header length {} exceeds the {} bytes that follow",
                           header_len, file.size() - 8));
  std::string text(header_len, '\0');
  file.read(8, text.data(), header_len, "the header");

  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    fail_input(path, fmt::format("header is not valid JSON (error at byte {} of the header)", e.byte));
  }
  if (!header.is_object()) fail_input(path, "header must be a JSON object mapping tensor names to entries");

  const uint64_t data_start = 8 + header_len;
  QKV t;
  t.q = read_entry(file, header, kNames[0], data_start);
  t.k = read_entry(file, header, kNames[1], data_start);
  t.v = read_entry(file, header, kNames[2], data_start);
  detail::check_qkv(t, path);
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
