// attnlab core: the one tensor type. Readable ground truth, not a fast path.
//
// A tensor holds an attention operand shaped (B, H, N, d) — batch, heads, tokens, head dimension —
// row-major and contiguous, so element (b, h, n, c) lives at ((b·H + h)·N + n)·d + c. Per-head (N, d)
// matrices are exposed as Eigen maps without copies.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

struct Shape4 {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t len = 0;  // tokens N
  int64_t dim = 0;  // head dimension d

  int64_t count() const { return batch * heads * len * dim; }
  int64_t head_count() const { return len * dim; }
  bool operator==(const Shape4&) const = default;
  std::string str() const;  // "(B, H, N, d)" with numbers
};

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
class BasicTensor {
 public:
  using Map = Eigen::Map<RowMatrix<T>>;
  using ConstMap = Eigen::Map<const RowMatrix<T>>;

  BasicTensor() = default;
  explicit BasicTensor(Shape4 shape, T fill = T(0))
      : shape_(shape), data_(static_cast<size_t>(shape.count()), fill) {}

  const Shape4& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }

  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  std::vector<T>& values() { return data_; }
  const std::vector<T>& values() const { return data_; }

  int64_t offset(int64_t b, int64_t h, int64_t n = 0, int64_t c = 0) const {
    return ((b * shape_.heads + h) * shape_.len + n) * shape_.dim + c;
  }
  T& at(int64_t b, int64_t h, int64_t n, int64_t c) { return data_[offset(b, h, n, c)]; }
  T at(int64_t b, int64_t h, int64_t n, int64_t c) const { return data_[offset(b, h, n, c)]; }

  // The (N, d) matrix of head h of batch entry b.
  Map head(int64_t b, int64_t h) { return Map(data() + offset(b, h), shape_.len, shape_.dim); }
  ConstMap head(int64_t b, int64_t h) const {
    return ConstMap(data() + offset(b, h), shape_.len, shape_.dim);
  }

 private:
  Shape4 shape_;
  std::vector<T> data_;
};

using Tensor = BasicTensor<float>;      // every operand and output
using TensorF64 = BasicTensor<double>;  // the FP64 ground truth

// The three attention operands. q is (B, Hq, Nq, d); k and v are (B, Hkv, Nkv, d).
struct QKV {
  Tensor q, k, v;
};

}  // namespace attnlab
