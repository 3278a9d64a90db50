// attnlab kernels: a decode ring part whose shard is, chunk by chunk, an image of the variant's cache built once per
// token span (kivi's and turbo's: the one-GPU cache's tokens of the span in the kernel's layout). The images are
// kept — a shard's layout is needed again at every attend, and its size before it is packed — behind `mutable`: the
// ring calls a variant from one host thread (ring_attention.h).
#pragma once

#include "kernels/context_parallel/ring_attention.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace attnlab::kernels {

// Image: the variant's chunk image, with its bytes in `bytes` (what the links carry).
template <class Image>
class ImageRing : public RingVariant {
 public:
  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return chunk_offset(spans, spans.size(), [&](const cp::Span& s) { return chunk_bytes(s); });
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override {
    std::vector<std::byte> out;
    for (const cp::Span& s : spans)
      if (s.size() > 0) {
        const Image& c = image(s);
        out.insert(out.end(), c.bytes.begin(), c.bytes.end());
      }
    return out;
  }

 protected:
  // The image of the tokens `s` (non-empty), built from the variant's whole cache.
  virtual Image build_image(cp::Span s) const = 0;

  const Image& image(cp::Span s) const {
    const auto key = std::make_pair(s.begin, s.end);
    if (auto it = images_.find(key); it != images_.end()) return it->second;
    return images_.emplace(key, build_image(s)).first->second;
  }
  // Where chunk `chunk` of a shard packed from `spans` starts.
  const std::byte* chunk_base(const void* shard, std::span<const cp::Span> spans, int chunk) const {
    return static_cast<const std::byte*>(shard) +
           chunk_offset(spans, size_t(chunk), [&](const cp::Span& s) { return chunk_bytes(s); });
  }
  // The largest bytes(image) over the images built so far of at most kv_len tokens: a decode's workspace, asked
  // after the ring has packed the shards (a chunk's chains depend on its image, not on its size alone).
  template <class Bytes>
  size_t most_over_images(int64_t kv_len, Bytes&& bytes) const {
    size_t most = 0;
    for (const auto& [span, c] : images_)
      if (span.second - span.first <= kv_len) most = std::max(most, size_t(bytes(c)));
    return most;
  }

 private:
  size_t chunk_bytes(const cp::Span& s) const { return s.size() > 0 ? image(s).bytes.size() : 0; }

  mutable std::map<std::pair<int64_t, int64_t>, Image> images_;
};

}  // namespace attnlab::kernels
