// attnlab core: sub-byte packing of quantized codes — the layout the kernels will read.
//
// Codes of `bits` ∈ {2, 4, 8} are packed little-end first: element i sits in byte ⌊i·bits/8⌋ at bit
// offset (i·bits) mod 8, so
//   INT8: one code per byte;
//   INT4: element 2k in the low nibble (bits 0–3) of byte k, element 2k+1 in the high nibble (4–7);
//   INT2: element 4k in bits 0–1 of byte k, 4k+1 in bits 2–3, 4k+2 in bits 4–5, 4k+3 in bits 6–7.
// Example: codes {1, 2} at 4 bits → the single byte 0x21. When n is not a multiple of the codes per
// byte the unused high bits of the last byte are 0. This is the order in which a GPU thread that loads
// a 32-bit word and shifts right by `bits` per step sees the elements in index order.
//
// Unsigned codes (the asymmetric quantizer's q ∈ [0, 2^bits − 1]) go through pack_codes; signed INT4
// (two's complement nibbles, q ∈ [−8, 7], e.g. FireQ's per-token INT4) through pack_int4.
// A bits value outside {2, 4, 8}, a code out of range or n < 0 throws std::invalid_argument: these are
// programming errors of the caller, not user input.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::formats {

int64_t packed_bytes(int64_t n, int bits);  // ⌈n·bits/8⌉

// codes (n) each < 2^bits → packed (packed_bytes(n, bits)).
std::vector<uint8_t> pack_codes(const uint8_t* codes, int64_t n, int bits);
// packed (packed_bytes(n, bits)) → codes (n).
std::vector<uint8_t> unpack_codes(const uint8_t* packed, int64_t n, int bits);

// Signed INT4: values (n) in [−8, 7] → packed (⌈n/2⌉) as 4-bit two's complement nibbles, and back.
std::vector<uint8_t> pack_int4(const int8_t* values, int64_t n);
std::vector<int8_t> unpack_int4(const uint8_t* packed, int64_t n);

}  // namespace attnlab::formats
