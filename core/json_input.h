// attnlab core: every JSON the tools read (configs, GPU specs, model files, measurements, the header of a
// safetensors file) goes through here, so hostile text is refused in one place, before it is parsed:
//   - a NUL byte anywhere (text after it would otherwise be ignored by some readers),
//   - nesting deeper than kMaxJsonDepth arrays/objects (a deep value overflows the stack when copied),
//   - malformed JSON, and numbers beyond the double range (1e999),
// each as an InputError naming `where` (the file or field) and the byte offset.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace attnlab {

inline constexpr int kMaxJsonDepth = 64;                      // no attnlab file nests deeper than 6
inline constexpr std::uint64_t kMaxJsonFileBytes = 64ull << 20;  // configs, specs, measurements

// Parses `text`; throws InputError("<where>: …") on any of the above. `where` goes into the message as it
// is: a label of the program's own ("--vary") or a path already passed through echo().
nlohmann::json parse_json_text(std::string_view text, const std::string& where);

// Reads a regular file (not a folder, FIFO or device: those are refused before opening, so nothing
// blocks) of at most kMaxJsonFileBytes and parses it; errors name the path, echoed (core/error.h).
nlohmann::json read_json_file(const std::string& path);

}  // namespace attnlab
