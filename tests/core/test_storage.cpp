// The storage declaration's byte count (core/storage.h) against hand counts: blocks with a short last one,
// packing runs padded to a whole byte, head classes of different widths, per-tensor scales, KIVI's residual,
// the decode buffer's flushed blocks and pending tokens, and the per-token rate the capacity model reads.
#include "core/storage.h"
#include "tests/catch.h"

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TensorStorage progressive(int bits) {  // TurboAttention's layout: codes per block, s_int and z_int, s_K
  return {int_format(bits), kPerBlock, {{"s_int", kInt8, {kPerBlock, 1}}, {"z_int", kInt8, {kPerBlock, 1}},
                                        {"s_K", kFp32, {kPerBlock, kWhole}}}};
}

TEST_CASE("number formats: names and widths", "[storage]") {
  CHECK(kFp32.name() == "fp32");
  CHECK(kFp16.name() == "fp16");
  CHECK(kBf16.name() == "bf16");
  CHECK(kE4m3.name() == "e4m3");
  CHECK(int_format(2).name() == "int2");
  CHECK(int_format(4).bytes() == 0.5);
  CHECK(kE4m3.bytes() == 1);
}

TEST_CASE("cache bytes: blocks, head classes and the decode buffer by hand", "[storage]") {
  KvCache c;
  c.channels = 64, c.block_tokens = 64;
  c.classes = {{1, progressive(2), progressive(2)}, {kOtherHeads, progressive(4), progressive(4)}};
  c.buffer = {16, kInt8, {{"s_universal", kFp32, {kWhole, kWhole}}}};
  CHECK(class_heads(c, 0, 3) == 1);
  CHECK(class_heads(c, 1, 3) == 2);
  // 100 tokens, 37 through the buffer: 63 prefilled (one short block), 2 flushed blocks of 16, 5 pending.
  const CacheBytes b = cache_bytes(c, 3, 100, 37);
  // Per head and tensor: codes 63·64 and 2·16·64 elements at the head's width, 5 pending INT8 tokens;
  // 3 blocks × (64 + 64 + 4) scale bytes; 4 bytes of universal scale.
  const double int4_codes = 63 * 64 / 2 + 2 * 16 * 64 / 2 + 5 * 64, int2_codes = 63 * 64 / 4 + 2 * 16 * 64 / 4 + 5 * 64;
  CHECK(b.k.codes == 2 * int4_codes + int2_codes);
  CHECK(b.k.scales == 3 * 3 * 132);
  CHECK(b.k.fixed == 3 * 4);
  CHECK(b.v.total() == b.k.total());
  // Without decode steps the buffer holds nothing and stores no scale; 100 tokens are 2 blocks (64 + 36).
  const CacheBytes p = cache_bytes(c, 3, 100);
  CHECK(p.k.codes == 2 * 100 * 64 / 2 + 100 * 64 / 4);
  CHECK(p.k.scales == 3 * 2 * 132);
  CHECK(p.k.fixed == 0);
  // A 2-head class that asks for more heads than there are takes what there is.
  c.classes[0].heads = 5;
  CHECK(class_heads(c, 0, 3) == 3);
  CHECK(class_heads(c, 1, 3) == 0);
}

TEST_CASE("cache bytes: packing runs are padded to a whole byte", "[storage]") {
  KvCache c;
  c.channels = 3, c.block_tokens = 5;
  c.classes = {{kOtherHeads, {int_format(4), kPerBlock, {}}, {int_format(4), kWhole, {}}}};
  // 6 tokens × 3 channels at 4 bits: per block ⌈15/2⌉ + ⌈3/2⌉ = 10 bytes; in one run ⌈18/2⌉ = 9.
  const CacheBytes b = cache_bytes(c, 1, 6);
  CHECK(b.k.codes == 10);
  CHECK(b.v.codes == 9);
}

TEST_CASE("cache bytes: KIVI's residual keeps whole groups quantized", "[storage]") {
  KvCache c;
  c.channels = 128, c.block_tokens = 32;
  c.classes = {{kOtherHeads, {int_format(2), kWhole, {{"scale", kFp16, {32, 1}}, {"zero", kFp16, {32, 1}}}},
                {int_format(2), kWhole, {{"scale", kFp16, {1, 32}}, {"zero", kFp16, {1, 32}}}}}};
  c.residual = Residual{128, kFp16};
  // 300 tokens: ⌊(300 − 128)/32⌋·32 = 160 quantized, 140 in FP16.
  const CacheBytes b = cache_bytes(c, 1, 300);
  CHECK(b.k.codes == 160 * 128 / 4 + 140 * 128 * 2);
  CHECK(b.k.scales == 2 * (160 / 32) * 128 * 2);  // per channel per 32 tokens, scale and zero
  CHECK(b.v.scales == 2 * 160 * (128 / 32) * 2);  // per token per 32 channels
  // At most R tokens: all of them in FP16, no scale.
  const CacheBytes r = cache_bytes(c, 1, 128);
  CHECK(r.total() == 2 * 128 * 128 * 2);
  // The rate: with N − R a whole number of groups, per_token·N + per_sequence is the count.
  const CacheRate rate = cache_rate(c, 1);
  const double per_token = rate.k.per_token + rate.v.per_token, per_seq = rate.k.per_sequence + rate.v.per_sequence;
  CHECK(per_token == 2 * 128 / 4 + 4 * 128 / 32.0 + 4 * 4);
  for (int64_t n : {160, 288, 1120}) CHECK(cache_bytes(c, 1, n).total() == per_token * double(n) + per_seq);
}

TEST_CASE("cache bytes: per-tensor scales are per head whatever the tokens; the rate holds them", "[storage]") {
  KvCache c;
  c.channels = 64;
  c.classes = {{kOtherHeads, {kInt8, kWhole, {{"S_K", kFp32, {1, kWhole}}}},
                {kInt8, kWhole, {{"S_V", kFp32, {kWhole, kWhole}}}}}};
  const CacheBytes b = cache_bytes(c, 2, 130);
  CHECK(b.k.total() == 2 * (130 * 64 + 130 * 4));
  CHECK(b.v.codes == 2 * 130 * 64);
  CHECK(b.v.fixed == 2 * 4);
  const CacheRate r = cache_rate(c, 2);
  CHECK(r.v.per_sequence == 8);
  CHECK(b.total() == (r.k.per_token + r.v.per_token) * 130 + r.k.per_sequence + r.v.per_sequence);
}

TEST_CASE("cache rate: the decode buffer is reserved at full capacity", "[storage]") {
  KvCache c;
  c.channels = 128, c.block_tokens = 64;
  c.classes = {{kOtherHeads, progressive(4), progressive(4)}};
  c.buffer = {64, kInt8, {{"s_universal", kFp32, {kWhole, kWhole}}}};
  const CacheRate r = cache_rate(c, 8);
  CHECK(r.k.per_token + r.v.per_token == 8 * 2 * (64 + (2 * 128 + 4) / 64.0));
  CHECK(r.k.reserve + r.v.reserve == 8 * 2 * (64 * 128 + 4));
  CHECK(r.k.per_sequence == r.k.reserve);
  for (int64_t n : {64, 640, 4096})
    CHECK(cache_bytes(c, 8, n).total() + r.k.reserve + r.v.reserve ==
          (r.k.per_token + r.v.per_token) * double(n) + r.k.per_sequence + r.v.per_sequence);
}

TEST_CASE("a tensor read as one block: Q's token, block and tensor scales", "[storage]") {
  const TensorStorage q{kInt8, kWhole, {{"S_Q", kFp32, {1, kWhole}}, {"s_Q", kFp32, {48, kWhole}}, {"t", kBf16, {kWhole, 8}}}};
  const TensorBytes b = tensor_bytes(q, 100, 64);
  CHECK(b.codes == 100 * 64);
  CHECK(b.scales == 100 * 4 + 3 * 4);  // per token; per 48 tokens, the last block short
  CHECK(b.fixed == 8 * 2);             // per tensor, per 8 channels
}

TEST_CASE("K/V read from HBM are quantized on chip unless already in the operands' format: the rule and its words", "[storage]") {
  Storage turbo;  // TurboAttention Alg. 1: FP16 K/V in HBM, INT8 operands
  turbo.k = turbo.v = kInt8;
  turbo.kv_in = TensorStorage{kFp16, kWhole, {}};
  CHECK(!kv_in_holds_operands(turbo));
  CHECK(describe(turbo).find("K, V read in fp16 and quantized on chip") != std::string::npos);
  Storage fireq;  // FireQ App. D: E4M3 K̂/V̂ with their scales are the operands
  fireq.k = fireq.v = kE4m3;
  fireq.kv_in = TensorStorage{kE4m3, kWhole, {{"β", kBf16, {1, kWhole}}}};
  CHECK(kv_in_holds_operands(fireq));
  const std::string text = describe(fireq);
  CHECK(text.find("(the operands as stored)") != std::string::npos);
  CHECK(text.find("quantized on chip") == std::string::npos);
  fireq.v = kFp16;  // one operand in another format: that one is quantized on chip
  CHECK(!kv_in_holds_operands(fireq));
}

}  // namespace
}  // namespace attnlab
