// attnlab report: the PNG text chunk that says attnlab made an image (PNG 1.2 §11.3.4.3, tEXt, keyword
// "Software"). attnlab-gui --screenshot writes it; the output-file rule (output_kinds.h) reads it to tell
// a screenshot attnlab wrote, which it may replace, from someone's picture, which it must not.
#pragma once

#include <string>
#include <string_view>

namespace attnlab::report {

// The Software text attnlab's PNGs carry.
inline constexpr std::string_view kPngSoftware = "attnlab";

// `png` with a tEXt chunk "Software" = kPngSoftware inserted right after its IHDR chunk (where a reader
// finds it without reading the image data). `png` must be a PNG whose first chunk is IHDR, as every
// encoder writes it; anything else is returned unchanged.
std::string with_software_text(const std::string& png);

// Whether the first bytes of a file (`head`) are a PNG with a tEXt "Software" chunk whose text starts
// with kPngSoftware among the chunks before the image data. Any byte string is safe to give: chunk
// lengths are checked against what is there.
bool has_attnlab_software(std::string_view head);

}  // namespace attnlab::report
