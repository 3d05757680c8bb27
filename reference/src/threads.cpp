#include "sgdc/reference/threads.hpp"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace sgdc::reference {

namespace {
// 0: not set, use the default.
std::atomic<int> chosen{0};

// More threads than this is a typo, not a machine.
constexpr int most_threads = 1024;

int default_threads() {
  // Read once: getenv races with a concurrent setenv, and the count must not change
  // under a running loop.
  static const int count = [] {
    if (const char* text = std::getenv("SGDC_THREADS")) {
      int value = 0;
      const char* end = text + std::strlen(text);
      const auto [at, error] = std::from_chars(text, end, value);
      if (error == std::errc{} && at == end && value > 0)
        return value < most_threads ? value : most_threads;
    }
    const unsigned machine = std::thread::hardware_concurrency();
    return machine == 0 ? 1 : static_cast<int>(machine < most_threads ? machine : most_threads);
  }();
  return count;
}
}  // namespace

int oracle_threads() {
  const int set = chosen.load(std::memory_order_relaxed);
  return set > 0 ? set : default_threads();
}

void set_oracle_threads(int threads) {
  chosen.store(threads > 0 ? (threads < most_threads ? threads : most_threads) : 0,
               std::memory_order_relaxed);
}

}  // namespace sgdc::reference
