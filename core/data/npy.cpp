// attnlab data: Q/K/V as three NumPy .npy files (format summary in npy.h).
//
// The header is a Python literal, so it gets a small hand-written parser for the one dict form numpy
// writes rather than a general Python parser. Little-endian host assumed (static_assert in codec.cpp).
#include "core/data/npy.h"

#include "core/data/codec.h"
#include "core/data/file_io.h"
#include "core/data/npy_array.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

namespace attnlab::data {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

class DictParser {
 public:
  DictParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  detail::NpyHeader parse() {
    detail::NpyHeader h;
    bool seen[3] = {false, false, false};
    expect('{', "'{'");
    while (!eat('}')) {
      const std::string key = string();
      expect(':', "':' after a key");
      int slot = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (slot < 0)
        fail_input(where_, fmt::format("npy header has unexpected key '{}' (expected descr, fortran_order, shape)",
                                       detail::printable(key)));
      if (seen[slot]) bad(fmt::format("duplicate key '{}'", key));
      seen[slot] = true;
      if (slot == 0) h.descr = string();
      if (slot == 1) h.fortran_order = boolean();
      if (slot == 2) h.shape = tuple();
      if (!eat(',')) {
        expect('}', "',' or '}'");
        break;
      }
    }
    space();
    if (i_ != s_.size()) bad("unexpected text after the dict");
    const char* keys[3] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; ++k)
      if (!seen[k]) fail_input(where_, fmt::format("npy header lacks the '{}' key", keys[k]));
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail_input(where_, fmt::format("npy header is not a valid dict: {} at character {}", what, i_));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) bad(fmt::format("expected {}", what));
  }
  std::string string() {
    space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a quoted string");
    const char quote = s_[i_++];
    const size_t start = i_;
    // numpy's keys and descr never need escapes, so a backslash is as unexpected as a missing quote.
    while (i_ < s_.size() && s_[i_] != quote && s_[i_] != '\\' && s_[i_] != '\n') ++i_;
    if (i_ >= s_.size() || s_[i_] != quote) bad("unterminated or escaped string");
    return s_.substr(start, i_++ - start);
  }
  bool boolean() {
    space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string w = word;
      if (s_.compare(i_, w.size(), w) == 0) {
        i_ += w.size();
        return value;
      }
    }
    bad("expected True or False");
  }
  uint64_t integer() {
    space();
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') bad("expected a non-negative integer");
    uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(s_[i_] - '0');
      if (v > (UINT64_MAX - digit) / 10) bad("shape entry too large");
      v = v * 10 + digit;
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 numpy wrote longs as 3L
    return v;
  }
  std::vector<uint64_t> tuple() {
    expect('(', "'(' opening the shape tuple");
    std::vector<uint64_t> out;
    while (!eat(')')) {
      out.push_back(integer());
      if (!eat(',')) {
        expect(')', "',' or ')' in the shape tuple");
        break;
      }
    }
    return out;
  }

  const std::string& s_;
  const std::string& where_;
  size_t i_ = 0;
};

std::string tensor_header(const Shape4& s, Dtype dtype) {
  return data::npy_header(dtype == Dtype::f32 ? "<f4" : "<f2",
                          {uint64_t(s.batch), uint64_t(s.heads), uint64_t(s.len), uint64_t(s.dim)});
}

}  // namespace

namespace detail {

NpyHeader parse_npy_header(const std::string& text, const std::string& where) {
  return DictParser(text, where).parse();
}

NpyPreamble read_npy_preamble(InFile& file) {
  const std::string& path = file.path();
  unsigned char pre[8] = {};
  const uint64_t have = std::min<uint64_t>(file.size(), 8);
  file.read(0, pre, have, "the magic");
  if (std::memcmp(pre, kMagic, std::min<uint64_t>(have, 6)) != 0)
    fail_input(path, "not an npy file (bad magic, expected \"\\x93NUMPY\")");
  if (have < 8) fail_input(path, fmt::format("file is truncated: {} bytes, shorter than the npy preamble", have));
  const int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail_input(path, fmt::format("npy format version {}.{} is not supported (need 1.0, 2.0 or 3.0)", major, minor));
  const uint64_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_raw[4] = {};
  file.read(8, len_raw, len_bytes, "the header length");
  uint64_t header_len = 0;
  for (uint64_t b = 0; b < len_bytes; ++b) header_len |= uint64_t{len_raw[b]} << (8 * b);
  const uint64_t header_start = 8 + len_bytes;
  file.require(header_start, header_len, "the header");
  std::string text(header_len, '\0');
  file.read(header_start, text.data(), header_len, "the header");
  return {parse_npy_header(text, path), header_start + header_len};
}

}  // namespace detail

namespace {

// What one .npy header says, checked against the file's real size; reads no data.
struct NpyLayout {
  Dtype dtype = Dtype::f32;
  Shape4 shape;
  uint64_t data_start = 0;
};

NpyLayout read_layout(detail::InFile& file) {
  const std::string& path = file.path();
  const detail::NpyPreamble pre = detail::read_npy_preamble(file);
  const detail::NpyHeader& h = pre.header;
  std::optional<Dtype> dtype;
  if (h.descr == "<f4") dtype = Dtype::f32;
  if (h.descr == "<f2") dtype = Dtype::f16;
  if (h.descr == ">f4" || h.descr == ">f2")
    fail_input(path,
               fmt::format("dtype '{}' is big-endian; only little-endian '<f4' and '<f2' are supported", h.descr));
  if (!dtype)
    fail_input(path, fmt::format("dtype '{}' is not supported (need float32 '<f4' or float16 '<f2')",
                                 detail::printable(h.descr)));
  if (h.fortran_order) fail_input(path, "fortran_order is True; only C-order arrays are supported");
  const NpyLayout layout{*dtype, detail::checked_shape(h.shape, *dtype, path), pre.data_start};
  const uint64_t bytes = detail::byte_size(layout.shape, layout.dtype);
  file.require(layout.data_start, bytes, "the tensor data");
  // Extra bytes mean the header's shape undercounts the data: better refused than silently cut.
  const uint64_t data_end = layout.data_start + bytes;
  if (file.size() != data_end)
    fail_input(path, fmt::format("{} bytes follow the data that shape {} implies (header and data disagree)",
                                 file.size() - data_end, layout.shape.str()));
  return layout;
}

// q.npy, k.npy, v.npy of `dir`, after checking that `dir` is a folder.
std::vector<std::string> npy_paths(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) fail_input(echo_path(dir), "folder not found");
  if (ec) fail_input(echo_path(dir), "cannot be read (" + ec.message() + ")");
  if (st.type() != fs::file_type::directory)
    fail_input(echo_path(dir), "is not a folder (expected q.npy, k.npy and v.npy inside)");
  std::vector<std::string> paths;
  for (const char* name : {"q", "k", "v"}) {
    const std::string path = (fs::path(dir) / (std::string(name) + ".npy")).string();
    // Named in the rule too: a long folder path is cut in the message (echo) and would drop the file name.
    if (!fs::exists(path, ec) && !ec)
      fail_input(echo_path(path),
                 fmt::format("file not found: the folder holds no {}.npy (it must hold q.npy, k.npy and v.npy)", name));
    paths.push_back(path);
  }
  return paths;
}

}  // namespace

Tensor load_npy(const std::string& path) {
  detail::InFile file(path);
  const NpyLayout layout = read_layout(file);
  return detail::read_tensor(file, layout.data_start, layout.shape, layout.dtype, file.path());
}

QkvShapes read_npy_folder_shapes(const std::string& dir) {
  const std::vector<std::string> paths = npy_paths(dir);
  Shape4 shapes[3];
  for (int i = 0; i < 3; ++i) {
    detail::InFile file(paths[i]);
    shapes[i] = read_layout(file).shape;
  }
  const QkvShapes out{shapes[0], shapes[1], shapes[2]};
  detail::check_qkv_shapes(out, echo_path(dir));
  return out;
}

QKV load_npy_folder(const std::string& dir) {
  read_npy_folder_shapes(dir);  // every header, and the shapes together, before any data is read
  const std::vector<std::string> paths = npy_paths(dir);
  QKV t;
  t.q = load_npy(paths[0]);
  t.k = load_npy(paths[1]);
  t.v = load_npy(paths[2]);
  detail::check_qkv(t, echo_path(dir));
  return t;
}

void save_npy_folder(const std::string& dir, const QKV& t, Dtype dtype) {
  if (dtype == Dtype::bf16) fail_input(dir, "npy has no bfloat16 dtype: save as f32 or f16, or use safetensors");
  detail::check_qkv(t, dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail_input(dir, "cannot create the folder (" + ec.message() + ")");
  // All three files are written to temporaries first, so a value that cannot be saved (NaN, FP16
  // overflow in v) leaves no mix of new and old files behind.
  std::unique_ptr<detail::OutFile> outs[3];
  int i = 0;
  for (const auto& [name, tensor] : {std::pair{"q", &t.q}, std::pair{"k", &t.k}, std::pair{"v", &t.v}}) {
    const std::string path = (fs::path(dir) / (std::string(name) + ".npy")).string();
    const std::string header = tensor_header(tensor->shape(), dtype);
    outs[i] = std::make_unique<detail::OutFile>(path);
    outs[i]->write(header.data(), header.size());
    detail::write_tensor(*outs[i], *tensor, dtype, path);
    ++i;
  }
  for (auto& out : outs) out->commit();
}

}  // namespace attnlab::data
