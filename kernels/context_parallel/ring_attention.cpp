#include "kernels/context_parallel/ring_attention.h"

#include "core/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/timing.h"
#include "kernels/context_parallel/lse_merge.h"

#include <fmt/format.h>

#include <cuda_bf16.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

// Makes `device` current for a scope and restores the previous one.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    ATTNLAB_CUDA(cudaGetDevice(&before_));
    ATTNLAB_CUDA(cudaSetDevice(device));
  }
  ~OnDevice() { cudaSetDevice(before_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int before_ = 0;
};

template <class T>
DeviceBuffer upload_bytes(const std::vector<T>& h) {
  DeviceBuffer d(h.size() * sizeof(T));
  if (!h.empty()) ATTNLAB_CUDA(cudaMemcpy(d.as<void>(), h.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

// One rank's streams, events and memory, all on its device (freed there).
struct Rank {
  int device = 0;
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t computed = nullptr, received = nullptr, done = nullptr, sent = nullptr;
  std::vector<DeviceBuffer> q;                   // [query chunk]: pack_queries
  DeviceBuffer own;                              // the rank's own shard (held at step 0)
  DeviceBuffer ring[2];                          // prefill: the shards held at steps 1 … P − 1, two buffers
  DeviceBuffer o_block, lse_block, workspace;    // one block's output, its kernel's scratch
  std::vector<DeviceBuffer> o_acc, l_acc;        // [query chunk]: the running result
  std::vector<DeviceBuffer> o_out, l_out;        // [query chunk]: the result in FP16, its logsumexp
  DeviceBuffer part;                             // decode: this rank's partial (O FP16, then logsumexp)
  std::vector<DeviceBuffer> parts;               // decode, rank 0: [rank] the partials gathered (merged in one pass)

  explicit Rank(int dev) : device(dev) {
    OnDevice on(device);
    ATTNLAB_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    ATTNLAB_CUDA(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&computed, &received, &done, &sent})
      ATTNLAB_CUDA(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
  ~Rank() {
    cudaSetDevice(device);  // the members' buffers are freed on their device, after this body
    for (cudaEvent_t e : {computed, received, done, sent}) cudaEventDestroy(e);
    for (cudaStream_t s : {compute, comm}) cudaStreamDestroy(s);
  }
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;
};

// One exchange's arguments (ring_transport.h), a slot per rank.
struct Exchange {
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<size_t> bytes;
  std::vector<cudaStream_t> streams;
  explicit Exchange(size_t ranks) : send(ranks), recv(ranks), bytes(ranks, 0), streams(ranks) {}
};

size_t rows_of(const Problem& p, cp::Span q) { return size_t(p.batch * p.q_heads * q.size()); }

// O in FP16 and its logsumexp, once.
double output_bytes(const Problem& p) {
  return double(p.q_shape().count()) * sizeof(__half) + double(p.batch * p.q_heads * p.q_len) * sizeof(float);
}

// A result of `count` values of type `element` on the device, as floats.
std::vector<float> download_output(const DeviceBuffer& d, size_t count, OutputElement element) {
  std::vector<uint16_t> bits(count);
  if (count > 0) ATTNLAB_CUDA(cudaMemcpy(bits.data(), d.as<void>(), count * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i)
    out[i] = element == OutputElement::bf16 ? __bfloat162float(__nv_bfloat16_raw{bits[i]}) : __half2float(__half_raw{bits[i]});
  return out;
}

// The kernel's output rows of query chunk `q` into the whole problem's (B, Hq, Nq, ·) tensors.
void place(const Problem& p, cp::Span q, const std::vector<float>& o, const std::vector<float>& lse, RingRun& into) {
  const int64_t d = p.head_dim, n = q.size();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t i = 0; i < n; ++i) {
        const size_t row = size_t((b * p.q_heads + h) * n + i);
        for (int64_t c = 0; c < d; ++c) into.o.at(b, h, q.begin + i, c) = o[row * size_t(d) + size_t(c)];
        into.lse[size_t((b * p.q_heads + h) * p.q_len + q.begin + i)] = lse[row];
      }
}

template <class T>
std::vector<T> download(const DeviceBuffer& d, size_t count) {
  std::vector<T> h(count);
  if (count > 0) ATTNLAB_CUDA(cudaMemcpy(h.data(), d.as<void>(), count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Runs `once` (one whole ring, its work on the ranks' streams) bracketed as run_ring's timing says; after_run is called
// once each timed run has finished (its events may be read).
std::vector<float> time_ring(std::vector<std::unique_ptr<Rank>>& ranks, const std::function<void()>& once,
                             const std::function<void()>& after_run = {}) {
  Rank& first = *ranks[0];
  OnDevice on(first.device);
  cudaEvent_t start, stop, fork;
  ATTNLAB_CUDA(cudaEventCreate(&start));
  ATTNLAB_CUDA(cudaEventCreate(&stop));
  ATTNLAB_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  std::vector<float> ms;
  for (int run = 0; run < kWarmupRuns + kTimedRuns; ++run) {
    ATTNLAB_CUDA(cudaEventRecord(start, first.compute));
    ATTNLAB_CUDA(cudaEventRecord(fork, first.compute));
    for (auto& r : ranks) {
      OnDevice at(r->device);
      for (cudaStream_t s : {r->compute, r->comm}) ATTNLAB_CUDA(cudaStreamWaitEvent(s, fork));
    }
    once();
    for (auto& r : ranks) {
      OnDevice at(r->device);
      ATTNLAB_CUDA(cudaEventRecord(r->done, r->compute));
      ATTNLAB_CUDA(cudaEventRecord(r->sent, r->comm));  // the rank's last transfer, too
    }
    for (auto& r : ranks)
      for (cudaEvent_t e : {r->done, r->sent}) ATTNLAB_CUDA(cudaStreamWaitEvent(first.compute, e));
    ATTNLAB_CUDA(cudaEventRecord(stop, first.compute));
    ATTNLAB_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    ATTNLAB_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (run >= kWarmupRuns) {
      ms.push_back(t);
      if (after_run) after_run();
    }
  }
  for (cudaEvent_t e : {start, stop, fork}) cudaEventDestroy(e);
  return ms;
}

void synchronize(std::vector<std::unique_ptr<Rank>>& ranks) {
  for (auto& r : ranks) {
    OnDevice on(r->device);
    ATTNLAB_CUDA(cudaDeviceSynchronize());
  }
}

// The marks of one traced run (core/context_parallel_trace.h): per rank an origin event, recorded where its streams
// start the run, and per step four timing events — the attention's begin and end on the compute stream, the
// exchange's on the communication stream — each read as ms from the rank's origin (events of one device only are
// compared). A mark that was never recorded stays NaN.
class RingTracer {
 public:
  enum Mark { compute_begin, compute_end, exchange_begin, exchange_end, kMarks };

  RingTracer(const std::vector<std::unique_ptr<Rank>>& ranks, int steps) : ranks_(ranks), steps_(steps) {
    try {
      for (const auto& r : ranks_) {
        OnDevice on(r->device);
        events_.emplace_back(size_t(1 + steps * kMarks), nullptr);
        recorded_.emplace_back(size_t(steps * kMarks), false);
        for (cudaEvent_t& e : events_.back()) ATTNLAB_CUDA(cudaEventCreate(&e));
      }
    } catch (...) {
      release();  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~RingTracer() { release(); }
  RingTracer(const RingTracer&) = delete;
  RingTracer& operator=(const RingTracer&) = delete;

  // On the rank's device (the caller's scope has it current).
  void origin(int rank, cudaStream_t s) { ATTNLAB_CUDA(cudaEventRecord(events_[size_t(rank)][0], s)); }
  void mark(int rank, int step, Mark m, cudaStream_t s) {
    const size_t i = size_t(step * kMarks + m);
    ATTNLAB_CUDA(cudaEventRecord(events_[size_t(rank)][1 + i], s));
    recorded_[size_t(rank)][i] = true;
  }

  // Step-major marks, once every rank has finished.
  std::vector<cp::StepMarks> marks() const {
    std::vector<cp::StepMarks> out(size_t(steps_) * ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      OnDevice on(ranks_[r]->device);
      for (int s = 0; s < steps_; ++s) {
        double t[kMarks];
        for (int m = 0; m < kMarks; ++m) {
          const size_t i = size_t(s * kMarks + m);
          float ms = NAN;
          if (recorded_[r][i]) ATTNLAB_CUDA(cudaEventElapsedTime(&ms, events_[r][0], events_[r][1 + i]));
          t[m] = ms;
        }
        out[size_t(s) * ranks_.size() + r] = {t[compute_begin], t[compute_end], t[exchange_begin], t[exchange_end]};
      }
    }
    return out;
  }

 private:
  // Every event made so far, each on its device; the caller's device current again after.
  void release() {
    int before = 0;
    cudaGetDevice(&before);
    for (size_t r = 0; r < events_.size(); ++r) {
      cudaSetDevice(ranks_[r]->device);
      for (cudaEvent_t& e : events_[r])
        if (e) cudaEventDestroy(e), e = nullptr;
    }
    cudaSetDevice(before);
  }

  const std::vector<std::unique_ptr<Rank>>& ranks_;
  int steps_;
  std::vector<std::vector<cudaEvent_t>> events_;  // [rank]: origin, then [step · kMarks + mark]
  std::vector<std::vector<bool>> recorded_;
};

// One run of `once` traced: every rank's streams start from one event of rank 0, as in time_ring, each rank's origin
// recorded there.
std::vector<cp::StepMarks> trace_ring(std::vector<std::unique_ptr<Rank>>& ranks, RingTracer& tracer,
                                      const std::function<void()>& once) {
  cudaEvent_t fork = nullptr;
  {
    OnDevice on(ranks[0]->device);
    ATTNLAB_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    ATTNLAB_CUDA(cudaEventRecord(fork, ranks[0]->compute));
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    OnDevice at(ranks[r]->device);
    for (cudaStream_t s : {ranks[r]->compute, ranks[r]->comm}) ATTNLAB_CUDA(cudaStreamWaitEvent(s, fork));
    tracer.origin(int(r), ranks[r]->compute);
  }
  once();
  synchronize(ranks);
  {
    OnDevice on(ranks[0]->device);
    cudaEventDestroy(fork);
  }
  return tracer.marks();
}

// ----- prefill: the ring -----

RingRun prefill(const Problem& p, const RingVariant& v, RingTransport& t, bool timed) {
  const int P = t.ranks();
  const OutputElement element = v.output_element();
  const cp::RingPlan plan =
      cp::plan_ring(p.q_len, p.kv_len, p.causal, P, cp::default_balance(p.causal), cp::kShardAlign);
  const int d = int(p.head_dim);
  // How each block's partial joins its query chunk's result (lse_merge.h); a chunk no block sees is cleared and stored.
  const cp::MergePlan merging = cp::merge_plan(plan);
  std::vector<std::unique_ptr<Rank>> ranks;
  size_t max_shard = 0;
  for (const cp::Shards& s : plan.shards) max_shard = std::max(max_shard, v.shard_bytes(s.kv));
  for (int r = 0; r < P; ++r) {
    ranks.push_back(std::make_unique<Rank>(t.device_of(r)));
    Rank& k = *ranks.back();
    OnDevice on(k.device);
    const cp::Shards& own = plan.shards[size_t(r)];
    size_t most_rows = 0, most_work = 0;
    for (const cp::Span& q : own.q) {
      k.q.push_back(upload_bytes(v.pack_queries(q)));
      const size_t rows = rows_of(p, q);
      k.o_acc.emplace_back(rows * size_t(d) * sizeof(float));
      k.l_acc.emplace_back(rows * sizeof(float));
      k.o_out.emplace_back(rows * size_t(d) * sizeof(__half));
      k.l_out.emplace_back(rows * sizeof(float));
      most_rows = std::max(most_rows, rows);
    }
    for (const auto& step : plan.steps)
      for (const cp::RingBlock& b : step[size_t(r)].blocks)
        if (b.kind != cp::BlockKind::masked)
          most_work = std::max(most_work, v.workspace_bytes(b.q.size(), b.kv.size()));
    k.own = upload_bytes(v.pack_shard(own.kv));
    if (P > 1) k.ring[0] = DeviceBuffer(max_shard), k.ring[1] = DeviceBuffer(max_shard);
    k.o_block = DeviceBuffer(most_rows * size_t(d) * sizeof(__half));
    k.lse_block = DeviceBuffer(most_rows * sizeof(float));
    k.workspace = DeviceBuffer(most_work);
  }
  double wire = 0;
  // One whole ring on the ranks' streams. The shard in hand at step s is the rank's own at s = 0, then ring[s mod 2];
  // the next arrives in ring[(s + 1) mod 2]. Each step: (1) the compute stream waits for the shard that arrived during
  // the last step, (2) the communication stream waits for the last step's blocks to leave the buffer it will fill,
  // then sends the shard in hand and receives the next, (3) the compute stream attends the blocks of the shard in
  // hand. The stream waits capture the events' records of the previous step: (1) and (2) are issued before the
  // step re-records them. The own shard stays where it is, so the timed runs repeat the same ring.
  // A traced run marks each step's attention (with its merges) and exchange.
  auto in_hand = [&](Rank& k, int s) { return s == 0 ? k.own.as<void>() : k.ring[s % 2].as<void>(); };
  RingTracer* tracer = nullptr;
  auto once = [&] {
    wire = 0;
    for (int r = 0; r < P; ++r) {
      Rank& k = *ranks[size_t(r)];
      OnDevice on(k.device);
      if (tracer) tracer->mark(r, 0, RingTracer::compute_begin, k.compute);
      for (size_t c = 0; c < k.o_acc.size(); ++c)
        if (merging.unseen[size_t(r)][c])
          ATTNLAB_CUDA(lse_merge_clear(k.o_acc[c].as<float>(), k.l_acc[c].as<float>(),
                                       rows_of(p, plan.shards[size_t(r)].q[c]), d, k.compute));
    }
    for (int s = 0; s < P; ++s) {
      Exchange x(ranks.size());
      for (int r = 0; r < P; ++r) {
        Rank& k = *ranks[size_t(r)];
        OnDevice on(k.device);
        if (s > 0) ATTNLAB_CUDA(cudaStreamWaitEvent(k.compute, k.received));  // (1)
        if (s > 0 && s < P - 1) ATTNLAB_CUDA(cudaStreamWaitEvent(k.comm, k.computed));  // (2)
        if (tracer && s > 0) tracer->mark(r, s, RingTracer::compute_begin, k.compute);
        if (tracer && s < P - 1) tracer->mark(r, s, RingTracer::exchange_begin, k.comm);
        x.send[size_t(r)] = in_hand(k, s);
        x.recv[size_t(r)] = P > 1 ? k.ring[(s + 1) % 2].as<void>() : nullptr;
        x.bytes[size_t(r)] = v.shard_bytes(plan.shards[size_t(plan.steps[size_t(s)][size_t(r)].kv_owner)].kv);
        x.streams[size_t(r)] = k.comm;
      }
      if (s < P - 1) {
        t.shift(x.send, x.recv, x.bytes, x.streams);
        for (int r = 0; r < P; ++r) {
          Rank& k = *ranks[size_t(r)];
          OnDevice on(k.device);
          ATTNLAB_CUDA(cudaEventRecord(k.received, k.comm));
          if (tracer) tracer->mark(r, s, RingTracer::exchange_end, k.comm);
          wire += double(x.bytes[size_t(r)]);
        }
      }
      for (int r = 0; r < P; ++r) {  // (3)
        Rank& k = *ranks[size_t(r)];
        OnDevice on(k.device);
        const cp::RingStep& step = plan.steps[size_t(s)][size_t(r)];
        const std::vector<cp::Span>& held = plan.shards[size_t(step.kv_owner)].kv;
        for (size_t i = 0; i < step.blocks.size(); ++i) {
          const cp::RingBlock& b = step.blocks[i];
          const cp::MergeRole role = merging.roles[size_t(s)][size_t(r)][i];
          if (role == cp::MergeRole::none) continue;
          // q_len = kv_len and both split alike: a block the diagonal crosses is a diagonal block, whose mask
          // (bottom-right over equal lengths) is the kernel's own causal mask.
          if (b.kind == cp::BlockKind::partial && !(b.q == b.kv))
            throw std::runtime_error("ring prefill: a masked block off the diagonal (q_len ≠ kv_len)");
          const size_t c = size_t(b.q_chunk), rows = rows_of(p, b.q);
          float* o_acc = k.o_acc[c].as<float>();
          float* l_acc = k.l_acc[c].as<float>();
          const bool only = role == cp::MergeRole::only;  // the kernel writes the chunk's result itself
          void* o = only ? k.o_out[c].as<void>() : k.o_block.as<void>();
          float* lse = only ? k.l_out[c].as<float>() : k.lse_block.as<float>();
          v.attend(k.q[c].as<void>(), b.q, in_hand(k, s), held, b.kv_chunk, b.kind == cp::BlockKind::partial, o, lse,
                   k.workspace.as<void>(), k.compute);
          if (role == cp::MergeRole::first)
            ATTNLAB_CUDA(lse_merge_first(o_acc, l_acc, o, element, lse, rows, d, k.compute));
          else if (role == cp::MergeRole::middle)
            ATTNLAB_CUDA(lse_merge_add(o_acc, l_acc, o, element, lse, rows, d, k.compute));
          else if (role == cp::MergeRole::last)
            ATTNLAB_CUDA(lse_merge_last(o_acc, l_acc, o, element, lse, k.o_out[c].as<void>(), k.l_out[c].as<float>(),
                                        rows, d, k.compute));
        }
        ATTNLAB_CUDA(cudaEventRecord(k.computed, k.compute));
        if (tracer && s < P - 1) tracer->mark(r, s, RingTracer::compute_end, k.compute);
      }
    }
    for (int r = 0; r < P; ++r) {
      Rank& k = *ranks[size_t(r)];
      OnDevice on(k.device);
      for (size_t c = 0; c < k.o_acc.size(); ++c)
        if (merging.unseen[size_t(r)][c])
          ATTNLAB_CUDA(lse_merge_store(k.o_acc[c].as<float>(), k.l_acc[c].as<float>(), k.o_out[c].as<void>(), element,
                                       k.l_out[c].as<float>(), rows_of(p, plan.shards[size_t(r)].q[c]), d, k.compute));
      if (tracer) tracer->mark(r, P - 1, RingTracer::compute_end, k.compute);
    }
  };

  RingRun run;
  run.ranks = P, run.transport = t.name();
  once();
  synchronize(ranks);
  run.wire_bytes = wire;
  run.io_bytes = output_bytes(p);
  for (const auto& k : ranks) {
    run.io_bytes += double(k->own.bytes());
    for (const DeviceBuffer& q : k->q) run.io_bytes += double(q.bytes());
  }
  run.o = Tensor(p.q_shape());
  run.lse.assign(size_t(p.batch * p.q_heads * p.q_len), 0.f);
  for (int r = 0; r < P; ++r) {
    Rank& k = *ranks[size_t(r)];
    OnDevice on(k.device);
    for (size_t c = 0; c < k.o_out.size(); ++c) {
      const cp::Span q = plan.shards[size_t(r)].q[c];
      place(p, q, download_output(k.o_out[c], rows_of(p, q) * size_t(d), element),
            download<float>(k.l_out[c], rows_of(p, q)), run);
    }
  }
  if (timed) {
    run.ms = time_ring(ranks, once);
    RingTracer traced(ranks, P);
    tracer = &traced;
    run.trace = cp::prefill_trace(P, trace_ring(ranks, traced, once));
    tracer = nullptr;
  }
  return run;
}

// ----- decode: the sharded cache -----

RingRun decode(const Problem& p, const RingVariant& v, RingTransport& t, bool timed) {
  const int P = t.ranks();
  const OutputElement element = v.output_element();
  const std::vector<cp::Span> shards = cp::decode_shards(p.kv_len, P, cp::kShardAlign);
  const int d = int(p.head_dim);
  const cp::Span queries{0, p.q_len};
  const size_t rows = rows_of(p, queries), o_bytes = rows * size_t(d) * sizeof(__half);
  const size_t part_bytes = rows * size_t(cp::partial_bytes_per_row(d));  // O in FP16, then the logsumexps
  static_assert(cp::partial_bytes_per_row(1) == sizeof(__half) + sizeof(float));
  static_assert(kMaxGpus <= kMaxMergeParts, "rank 0 merges every rank's partial in one pass");
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < P; ++r) {
    ranks.push_back(std::make_unique<Rank>(t.device_of(r)));
    Rank& k = *ranks.back();
    OnDevice on(k.device);
    const cp::Span own = shards[size_t(r)];
    k.q.push_back(upload_bytes(v.pack_queries(queries)));
    const std::vector<cp::Span> spans{own};
    k.own = upload_bytes(v.pack_shard(spans));
    k.part = DeviceBuffer(part_bytes);
    k.workspace = DeviceBuffer(own.size() > 0 ? v.workspace_bytes(p.q_len, own.size()) : 0);
    if (r == 0) {
      for (int from = 0; from < P; ++from) k.parts.emplace_back(from == 0 ? 0 : part_bytes);
      k.o_out.emplace_back(o_bytes);
      k.l_out.emplace_back(rows * sizeof(float));
    }
  }
  double wire = 0;
  // The merge on rank 0, timed apart: from the moment every partial is there to the stored result.
  cudaEvent_t merge_start = nullptr, merge_end = nullptr;
  {
    OnDevice on(ranks[0]->device);
    ATTNLAB_CUDA(cudaEventCreate(&merge_start));
    ATTNLAB_CUDA(cudaEventCreate(&merge_end));
  }
  struct Events {  // destroyed on every path out
    cudaEvent_t& a;
    cudaEvent_t& b;
    ~Events() { cudaEventDestroy(a), cudaEventDestroy(b); }
  } events{merge_start, merge_end};
  // A traced run marks each rank's attention (step 0), its partial's exchange and rank 0's merge (step 1).
  RingTracer* tracer = nullptr;
  auto once = [&] {
    Exchange x(ranks.size());
    for (int r = 0; r < P; ++r) {
      Rank& k = *ranks[size_t(r)];
      OnDevice on(k.device);
      const cp::Span own = shards[size_t(r)];
      auto* part = k.part.as<std::byte>();
      if (tracer) tracer->mark(r, 0, RingTracer::compute_begin, k.compute);
      if (own.size() > 0) {
        const std::vector<cp::Span> spans{own};
        v.attend(k.q[0].as<void>(), queries, k.own.as<void>(), spans, 0, false, part,
                 reinterpret_cast<float*>(part + o_bytes), k.workspace.as<void>(), k.compute);
        x.bytes[size_t(r)] = r == 0 ? 0 : part_bytes;
      }
      ATTNLAB_CUDA(cudaEventRecord(k.computed, k.compute));
      ATTNLAB_CUDA(cudaStreamWaitEvent(k.comm, k.computed));
      if (tracer) {
        tracer->mark(r, 0, RingTracer::compute_end, k.compute);
        tracer->mark(r, 1, RingTracer::exchange_begin, k.comm);
      }
      x.send[size_t(r)] = part;
      x.recv[size_t(r)] = ranks[0]->parts[size_t(r)].as<void>();
      x.streams[size_t(r)] = k.comm;
    }
    t.gather(x.send, x.recv, x.bytes, x.streams);
    if (tracer)
      for (int r = 0; r < P; ++r) {
        OnDevice on(ranks[size_t(r)]->device);
        tracer->mark(r, 1, RingTracer::exchange_end, ranks[size_t(r)]->comm);
      }
    wire = 0;
    for (size_t b : x.bytes) wire += double(b);
    Rank& first = *ranks[0];
    OnDevice on(first.device);
    ATTNLAB_CUDA(cudaEventRecord(first.received, first.comm));
    ATTNLAB_CUDA(cudaStreamWaitEvent(first.compute, first.received));
    ATTNLAB_CUDA(cudaEventRecord(merge_start, first.compute));
    if (tracer) tracer->mark(0, 1, RingTracer::compute_begin, first.compute);
    MergeParts parts;  // in rank order: the merge's rounding does not depend on arrival
    for (int r = 0; r < P; ++r) {
      if (shards[size_t(r)].size() == 0) continue;
      const auto* part = r == 0 ? first.part.as<std::byte>() : first.parts[size_t(r)].as<std::byte>();
      parts.o[parts.count] = part, parts.l[parts.count] = reinterpret_cast<const float*>(part + o_bytes);
      ++parts.count;
    }
    ATTNLAB_CUDA(lse_merge_parts(parts, first.o_out[0].as<void>(), element, first.l_out[0].as<float>(), rows, d,
                                 first.compute));
    ATTNLAB_CUDA(cudaEventRecord(merge_end, first.compute));
    if (tracer) tracer->mark(0, 1, RingTracer::compute_end, first.compute);
  };

  RingRun run;
  run.ranks = P, run.transport = t.name();
  once();
  synchronize(ranks);
  run.wire_bytes = wire;
  run.io_bytes = output_bytes(p) + double(ranks[0]->q[0].bytes());
  for (const auto& k : ranks) run.io_bytes += double(k->own.bytes());
  run.o = Tensor(p.q_shape());
  run.lse.assign(rows, 0.f);
  {
    OnDevice on(ranks[0]->device);
    place(p, queries, download_output(ranks[0]->o_out[0], rows * size_t(d), element),
          download<float>(ranks[0]->l_out[0], rows), run);
  }
  if (timed)
    run.ms = time_ring(ranks, once, [&] {
      float t = 0;
      ATTNLAB_CUDA(cudaEventElapsedTime(&t, merge_start, merge_end));
      run.merge_ms.push_back(t);
    });
  if (timed) {
    RingTracer traced(ranks, 2);
    tracer = &traced;
    run.trace = cp::decode_trace(P, trace_ring(ranks, traced, once));
    tracer = nullptr;
  }
  return run;
}

}  // namespace

std::string ring_refusal(const Problem& p) {
  if (p.phase == Phase::decode) {
    if (p.q_len != 1)
      return fmt::format("a decode across GPUs takes one query row per head (q_len {}): the cache is split by tokens "
                         "and every GPU attends the same query",
                         p.q_len);
    return "";
  }
  if (p.q_len != p.kv_len)
    return fmt::format("a prefill across GPUs attends a sequence to itself (q_len {} ≠ kv_len {}): the ring splits the "
                       "queries and the keys alike",
                       p.q_len, p.kv_len);
  return "";
}

RingRun run_ring(const Problem& p, const RingVariant& v, RingTransport& t, bool timed) {
  if (const std::string why = ring_refusal(p); !why.empty()) throw InputError("problem.gpus: " + why);
  return p.phase == Phase::decode ? decode(p, v, t, timed) : prefill(p, v, t, timed);
}

}  // namespace attnlab::kernels
