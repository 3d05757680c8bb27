// Peak memory of one expect() at a given shape: `oracle_memory N D K [adam]` (adam: the
// AdamW case of random_case.hpp, moments carried, instead of plain SGD). Prints the
// process's peak resident set (getrusage) before and after the call, the peak's growth
// during the call, and that growth per kernel element (D K), the oracle's largest
// arrays being the kernel-shaped ones. Run once per shape, in a fresh process: the
// peak only grows.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "random_case.hpp"
#include "sgdc/reference/oracle.hpp"

namespace {
// Peak resident set so far, in bytes (Linux reports KiB).
double peak_rss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}
}  // namespace

int main(int argc, char** argv) {
  const bool adam = argc == 5 && std::string_view(argv[4]) == "adam";
  if (argc != 4 && !adam) {
    std::fprintf(stderr, "usage: oracle_memory N D K [adam]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), d = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const sgdc::reference::Case c =
      adam ? sgdc::bench::random_adam_case(n, d, k) : sgdc::bench::random_case(n, d, k);
  // The moments are inputs too: two more kernels and biases.
  const double inputs = 4.0 * ((adam ? 3.0 : 1.0) * (static_cast<double>(d) * k + k) +
                               static_cast<double>(n) * d + static_cast<double>(n) * k);
  const double kernel_elements = static_cast<double>(d) * k;
  const double before = peak_rss();
  const auto start = std::chrono::steady_clock::now();
  const sgdc::reference::Expectation e = sgdc::reference::expect(c);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double after = peak_rss();
  std::printf(
      "%s shape %dx%dx%d: inputs %.1f MiB; peak RSS %.1f MiB before expect(), %.1f MiB after; "
      "growth %.1f MiB = %.1f bytes per kernel element; expect() %.2f s wall (%zu kernel "
      "values)\n",
      adam ? "AdamW" : "SGD", n, d, k, inputs / 0x1p20, before / 0x1p20, after / 0x1p20,
      (after - before) / 0x1p20, (after - before) / kernel_elements, seconds, e.kernel.size());
  return 0;
}
