// attnlab core: escaping of echoed values (error.h).
#include "core/error.h"

#include <fmt/format.h>

namespace attnlab {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (2–4 bytes, no overlongs or surrogates), or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;
    if (c == 0xF4 && b(1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

std::string escape(std::string_view s, std::size_t max_chars, bool escape_backslash) {
  std::string out;
  std::size_t chars = 0, i = 0;
  for (; i < s.size() && chars < max_chars; ++chars) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n", ++i;
    else if (c == '\t') out += "\\t", ++i;
    else if (c == '\r') out += "\\r", ++i;
    else if (c == '\\' && escape_backslash) out += "\\\\", ++i;
    else if (c >= 0x20 && c < 0x7F) out += static_cast<char>(c), ++i;
    else if (const std::size_t n = c >= 0x80 ? utf8_sequence(s, i) : 0; n > 0) out.append(s.substr(i, n)), i += n;
    else out += fmt::format("\\x{:02x}", c), ++i;
  }
  if (i < s.size()) out += fmt::format("…({} bytes in all)", s.size());
  return out;
}

}  // namespace

std::string echo(std::string_view value, std::size_t max_chars) { return escape(value, max_chars, true); }

std::string echo_path(std::string_view path) { return echo(path, kMaxPathChars); }

std::string one_line(std::string_view message, std::size_t max_chars) { return escape(message, max_chars, false); }

}  // namespace attnlab
