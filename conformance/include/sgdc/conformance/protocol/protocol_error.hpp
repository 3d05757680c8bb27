#pragma once
/// \file
/// The error a protocol v1 message decoder reports.

#include <stdexcept>
#include <string>

namespace sgdc::conformance::protocol {

/// A message from the adapter breaks protocol v1. The message says what is wrong
/// (e.g. "kernel has 3 values, expected 4") without naming the case; the caller adds
/// that.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sgdc::conformance::protocol