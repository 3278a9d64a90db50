// A main for the fuzz targets that replays given inputs once each, without libFuzzer: the sanitizer build
// (AddressSanitizer + UndefinedBehaviorSanitizer without libFuzzer, `make test-sanitize`) links every target with it, so
// CI replays seeds/ and regressions/ in the build it already has instead of a third, libFuzzer one (`make fuzz`
// still fuzzes with libFuzzer in build-fuzz). What libFuzzer's replay checks, this checks too: a sanitizer
// report or a signal ends the process; an exception other than InputError escapes LLVMFuzzerTestOneInput
// and terminates it; -timeout=S (seconds per input) and -rss_limit_mb=M (peak resident memory) are taken
// from the same command line; other -flags are libFuzzer's and ignored.
#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

const char* current_input = "";

void on_timeout(int) {
  // Only async-signal-safe calls here.
  const char prefix[] = "replay: timeout on ";
  (void)!write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!write(STDERR_FILENO, current_input, std::strlen(current_input));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(70);
}

long flag_value(const char* arg, const char* name, long fallback) {
  const size_t n = std::strlen(name);
  return std::strncmp(arg, name, n) == 0 ? std::strtol(arg + n, nullptr, 10) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  long timeout_s = 1200, rss_limit_mb = 2048;
  std::vector<const char*> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') {
      inputs.push_back(argv[i]);
      continue;
    }
    timeout_s = flag_value(argv[i], "-timeout=", timeout_s);
    rss_limit_mb = flag_value(argv[i], "-rss_limit_mb=", rss_limit_mb);
  }
  std::signal(SIGALRM, on_timeout);
  for (const char* path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", path);
      return 2;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    current_input = path;
    alarm(static_cast<unsigned>(timeout_s));
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    alarm(0);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    if (usage.ru_maxrss / 1024 > rss_limit_mb) {
      std::fprintf(stderr, "replay: %s took %ld MB of resident memory, over -rss_limit_mb=%ld\n", path,
                   usage.ru_maxrss / 1024, rss_limit_mb);
      return 1;
    }
  }
  std::printf("replay: %zu inputs, each accepted or refused with an InputError\n", inputs.size());
  return 0;
}
