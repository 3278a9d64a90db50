// attnlab core: the values of one probe — held in memory, or read from a sidecar file the first time
// anything asks for them (results.json schema /2 keeps large arrays in .npy files beside it: DESIGN.md,
// "Results travel"). Every access goes through get() or mut(), so no reader can see an array that was
// not loaded yet: it is loaded, or the load's InputError (naming the file) propagates.
//
// Copies of a sidecar-backed value share one loaded array (loaded once, under a lock: the GUI's worker
// and its main thread may both ask); mut() gives the copy its own vector first.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace attnlab {

class ProbeValues {
 public:
  using Loader = std::function<std::vector<double>()>;

  ProbeValues() = default;
  ProbeValues(std::vector<double> v) : own_(std::move(v)) {}  // NOLINT: a vector is a probe's values
  ProbeValues(std::initializer_list<double> v) : own_(v) {}
  template <class It, class = std::enable_if_t<!std::is_arithmetic_v<It>>>
  ProbeValues(It first, It last) : own_(first, last) {}
  // Values read by `load` when first asked for; `source` names the file (sidecar_file()).
  static ProbeValues deferred(std::string source, Loader load);

  const std::vector<double>& get() const;  // loads a deferred value (may throw InputError)
  std::vector<double>& mut();              // the same, as this value's own vector
  operator const std::vector<double>&() const { return get(); }  // NOLINT: read as a vector anywhere

  bool loaded() const;                    // false only for a deferred value not read yet
  const std::string& sidecar_file() const;  // the file a deferred value comes from; "" for in-memory ones

  // The vector interface the variants and views use.
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  double operator[](size_t i) const { return get()[i]; }
  double& operator[](size_t i) { return mut()[i]; }
  double at(size_t i) const { return get().at(i); }
  double back() const { return get().back(); }
  const double* data() const { return get().data(); }
  std::vector<double>::const_iterator begin() const { return get().begin(); }
  std::vector<double>::const_iterator end() const { return get().end(); }
  std::vector<double>::iterator begin() { return mut().begin(); }
  std::vector<double>::iterator end() { return mut().end(); }
  void reserve(size_t n) { mut().reserve(n); }
  void push_back(double x) { mut().push_back(x); }
  template <class... A>
  void assign(A&&... a) { mut().assign(std::forward<A>(a)...); }
  template <class... A>
  auto insert(A&&... a) { return mut().insert(std::forward<A>(a)...); }

  friend bool operator==(const ProbeValues& a, const ProbeValues& b) { return a.get() == b.get(); }
  friend bool operator==(const ProbeValues& a, const std::vector<double>& b) { return a.get() == b; }

 private:
  struct Deferred {
    std::string source;
    Loader load;
    std::mutex lock;
    bool done = false;
    std::vector<double> values;
  };
  std::vector<double> own_;
  std::shared_ptr<Deferred> deferred_;  // null when own_ holds the values
};

}  // namespace attnlab
