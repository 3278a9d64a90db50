#include "app/gui/worker.h"

#include "app/cli/backends.h"
#include "core/error.h"

namespace attnlab::gui {

Worker::~Worker() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void Worker::start(const Experiment& e) {
  if (busy_) return;
  if (thread_.joinable()) thread_.join();
  busy_ = true, cancel_ = false, progress_ = 0;
  thread_ = std::thread([this, e] {
    Outcome out;
    try {
      RunControl control;
      control.cancel = &cancel_;
      control.progress = [this](double f, const std::string& stage) {
        progress_ = f;
        std::lock_guard lock(mutex_);
        stage_ = stage;
      };
      out.results = cli::make_runner().run(e, control);
    } catch (const Cancelled&) {
      out.error = "cancelled";
    } catch (const std::exception& ex) {  // InputError (bad data file, too large) or an internal failure
      out.error = ex.what();
    }
    std::lock_guard lock(mutex_);
    done_ = std::move(out);
    busy_ = false;
  });
}

std::string Worker::stage() const {
  std::lock_guard lock(mutex_);
  return stage_;
}

std::optional<Worker::Outcome> Worker::take() {
  std::lock_guard lock(mutex_);
  std::optional<Outcome> out = std::move(done_);
  done_.reset();
  return out;
}

}  // namespace attnlab::gui
