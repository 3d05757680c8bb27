#pragma once
/// \file
/// The oracle's results shared by every evaluation in the process, for runs that meet the
/// same cases again (the kill matrix runs one seed's cases against every built-in).

#include <cstddef>

namespace sgdc::properties {

/// While one lives, every Context in the process takes the oracle's result for a case
/// (under one arithmetic) that an earlier evaluation computed, instead of computing it
/// again: the same result, bit for bit, for less work. Results are kept up to about
/// `capacity_bytes`, the oldest dropped first. One at a time: a second while one lives
/// throws std::logic_error. Safe to use from the runner's threads.
class SharedExpectations {
 public:
  explicit SharedExpectations(std::size_t capacity_bytes = std::size_t{64} << 20);
  ~SharedExpectations();
  SharedExpectations(const SharedExpectations&) = delete;
  SharedExpectations& operator=(const SharedExpectations&) = delete;

  /// Results computed, and results taken from the store instead, so far.
  std::size_t computed() const;
  std::size_t reused() const;
};

}  // namespace sgdc::properties
