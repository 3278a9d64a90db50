#include "core/probe_values.h"

namespace attnlab {

ProbeValues ProbeValues::deferred(std::string source, Loader load) {
  ProbeValues v;
  v.deferred_ = std::make_shared<Deferred>();
  v.deferred_->source = std::move(source);
  v.deferred_->load = std::move(load);
  return v;
}

const std::vector<double>& ProbeValues::get() const {
  if (!deferred_) return own_;
  const std::lock_guard<std::mutex> hold(deferred_->lock);
  if (!deferred_->done) {  // a failed load throws and leaves it pending: the next access says so again
    deferred_->values = deferred_->load();
    deferred_->done = true;
  }
  return deferred_->values;
}

std::vector<double>& ProbeValues::mut() {
  if (deferred_) {
    own_ = get();
    deferred_.reset();
  }
  return own_;
}

bool ProbeValues::loaded() const {
  if (!deferred_) return true;
  const std::lock_guard<std::mutex> hold(deferred_->lock);
  return deferred_->done;
}

const std::string& ProbeValues::sidecar_file() const {
  static const std::string none;
  return deferred_ ? deferred_->source : none;
}

}  // namespace attnlab
