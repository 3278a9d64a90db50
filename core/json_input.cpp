// attnlab core: guarded JSON reading (json_input.h).
#include "core/json_input.h"

#include "core/data/file_io.h"
#include "core/error.h"

#include <fmt/format.h>

#include <string>

namespace attnlab {

namespace {

// The depth of the deepest array/object in `text`, outside strings; stops counting past `limit` and
// returns the byte offset where the limit was crossed through `at`.
int nesting_depth(std::string_view text, int limit, std::size_t& at) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (depth > limit) {
        at = i;
        return depth;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& where) {
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail_input(where, fmt::format("contains a NUL byte at byte {}: not a JSON text", nul));
  std::size_t at = 0;
  if (nesting_depth(text, kMaxJsonDepth, at) > kMaxJsonDepth)
    fail_input(where, fmt::format("nests arrays/objects deeper than {} levels (at byte {})", kMaxJsonDepth, at));
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    fail_input(where, fmt::format("not valid JSON (byte {})", e.byte));
  } catch (const nlohmann::json::out_of_range&) {
    fail_input(where, "holds a number beyond the double range (e.g. 1e999)");
  } catch (const nlohmann::json::exception& e) {
    fail_input(where, fmt::format("not valid JSON ({})", one_line(e.what(), 120)));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  data::detail::InFile in(path);  // in.path(): the path echoed (escaped and cut), as every message shows it
  if (in.size() > kMaxJsonFileBytes)
    fail_input(in.path(),
               fmt::format("is {} bytes: JSON inputs are limited to {} MiB", in.size(), kMaxJsonFileBytes >> 20));
  std::string text(static_cast<std::size_t>(in.size()), '\0');
  in.read(0, text.data(), in.size(), "the JSON text");
  return parse_json_text(text, in.path());
}

}  // namespace attnlab
