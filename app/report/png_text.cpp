#include "app/report/png_text.h"

#include <array>
#include <cstdint>

namespace attnlab::report {

namespace {

constexpr std::string_view kSignature = "\x89PNG\r\n\x1a\n";
constexpr std::string_view kKeyword = "Software";

// PNG 1.2 Annex D: the CRC-32 of ISO 3309 (reflected polynomial 0xEDB88320) over a chunk's type and data.
uint32_t crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (const char b : bytes) c = table[(c ^ static_cast<unsigned char>(b)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void append_big_endian(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

uint32_t big_endian_at(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// A chunk: length (4 bytes, big-endian), type (4), data, CRC (4) over type and data.
std::string chunk(std::string_view type, std::string_view data) {
  std::string body(type);
  body += data;
  std::string out;
  append_big_endian(out, static_cast<uint32_t>(data.size()));
  out += body;
  append_big_endian(out, crc32(body));
  return out;
}

}  // namespace

std::string with_software_text(const std::string& png) {
  constexpr size_t kIhdrEnd = kSignature.size() + 4 + 4 + 13 + 4;  // IHDR's data is 13 bytes
  if (png.size() < kIhdrEnd || std::string_view(png).substr(0, kSignature.size()) != kSignature ||
      png.compare(kSignature.size() + 4, 4, "IHDR") != 0)
    return png;
  std::string text(kKeyword);
  text += '\0';  // tEXt: keyword, a null separator, the text (Latin-1, no terminator)
  text += kPngSoftware;
  return png.substr(0, kIhdrEnd) + chunk("tEXt", text) + png.substr(kIhdrEnd);
}

bool has_attnlab_software(std::string_view head) {
  if (head.substr(0, kSignature.size()) != kSignature) return false;
  size_t at = kSignature.size();
  while (head.size() - at >= 8) {  // a chunk's length and type are there
    const uint64_t length = big_endian_at(head, at);
    const std::string_view type = head.substr(at + 4, 4);
    if (type == "IDAT" || type == "IEND") return false;  // the text attnlab writes comes before the image data
    if (head.size() - at < 12 || length > head.size() - at - 12) return false;  // it runs past what was read
    const std::string_view data = head.substr(at + 8, length);
    if (type == "tEXt" && data.substr(0, kKeyword.size() + 1) == std::string(kKeyword) + '\0' &&
        data.substr(kKeyword.size() + 1).substr(0, kPngSoftware.size()) == kPngSoftware)
      return crc32(head.substr(at + 4, 4 + length)) == big_endian_at(head, at + 8 + length);
    at += 12 + length;
  }
  return false;
}

}  // namespace attnlab::report
