#include "sgdc/reference/threads.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "parallel_for.hpp"

namespace sgdc::reference {

namespace {
// 0: not set, use the default.
std::atomic<int> chosen{0};

// More threads than this is a typo, not a machine.
constexpr int most_threads = 1024;

// Set while this thread runs its share of a spread for_each_index: the threads are all
// busy, so nothing started from here splits again (no oversubscription).
thread_local bool spread = false;

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

bool inside_for_each_index() { return spread; }

bool splits_case(int n, int d, int k) {
  return static_cast<double>(n) * d * k >= parallel::threshold;
}

void for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn) {
  const std::size_t threads =
      spread ? 1 : std::min<std::size_t>(count, static_cast<std::size_t>(oracle_threads()));
  if (threads <= 1) {
    // In index order on this thread, every call run as on several.
    std::exception_ptr first;
    for (std::size_t i = 0; i < count; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  // Dynamic: drawn cases differ in cost by orders of magnitude, so equal ranges would
  // leave a thread idle while another works through the large ones.
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(count);
  auto work = [&] {
    const bool was = spread;
    spread = true;
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    spread = was;
  };
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the others take its share
    }
  }
  work();
  for (std::thread& t : workers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace sgdc::reference
