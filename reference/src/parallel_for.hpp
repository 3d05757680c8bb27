#pragma once
// Splitting the oracle's O(N D K) loops across threads. Internal to sgdc::reference.
//
// A loop split here computes each of its values wholly in one thread, in the order of
// the serial loop: results are the same bits whatever the thread count.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "sgdc/reference/threads.hpp"

namespace sgdc::reference::parallel {

/// N D K below which a case's loops stay on the calling thread. Starting and joining a
/// thread costs tens of microseconds; 2^17 multiply-adds of the certified path or of the
/// bounds cost a few hundred (measured in docs/benchmarks.md, "The oracle at layer
/// sizes"), so above this a split pays even for the cheapest loop it is used on.
inline constexpr double threshold = 0x1p17;

/// Columns per tile: a tile's accumulators (at most five doubles a column) stay in the
/// first-level cache.
inline constexpr int tile_columns = 512;

/// Threads for the loops of a case of shape n x d x k: one inside for_each_index, whose
/// threads already keep every core busy.
inline int threads_for(int n, int d, int k) {
  const double work = static_cast<double>(n) * d * k;
  return work < threshold || inside_for_each_index() ? 1 : oracle_threads();
}

/// Calls body(begin, end, part) on [0, count) cut into at most `threads` contiguous
/// ranges of near-equal size, in order (part 0 gets the first range), the first on the
/// calling thread and each other on a thread of its own; returns when all are done and
/// rethrows the first part's exception, if any.
template <class Body>
void for_ranges(std::size_t count, int threads, const Body& body) {
  const std::size_t parts = std::min<std::size_t>(count, threads < 1 ? 1 : threads);
  if (parts <= 1) {
    if (count > 0) body(std::size_t{0}, count, std::size_t{0});
    return;
  }
  auto begin = [&](std::size_t part) { return count * part / parts; };
  std::vector<std::exception_ptr> errors(parts);
  std::vector<std::thread> workers;
  workers.reserve(parts - 1);
  auto run = [&](std::size_t part) {
    try {
      body(begin(part), begin(part + 1), part);
    } catch (...) {
      errors[part] = std::current_exception();
    }
  };
  for (std::size_t part = 1; part < parts; ++part) {
    try {
      workers.emplace_back(run, part);
    } catch (const std::system_error&) {
      run(part);  // no thread to be had: the calling thread does this part too
    }
  }
  run(0);
  for (std::thread& t : workers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Calls body(row, begin, end, part) for every row of [0, rows) and every block
/// [begin, end) of at most tile_columns columns of [0, columns): the tiles in row-major
/// order, cut into contiguous ranges by for_ranges.
template <class Body>
void for_tiles(int rows, int columns, int threads, const Body& body) {
  const std::size_t blocks = (static_cast<std::size_t>(columns) + tile_columns - 1) / tile_columns;
  for_ranges(static_cast<std::size_t>(rows) * blocks, threads,
             [&](std::size_t first, std::size_t last, std::size_t part) {
               for (std::size_t t = first; t < last; ++t) {
                 const int row = static_cast<int>(t / blocks);
                 const int begin = static_cast<int>(t % blocks) * tile_columns;
                 body(row, begin, std::min(begin + tile_columns, columns), part);
               }
             });
}

}  // namespace sgdc::reference::parallel
