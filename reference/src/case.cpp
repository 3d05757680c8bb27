#include "sgdc/reference/case.hpp"

#include <stdexcept>
#include <string>

namespace sgdc {

namespace {
void expect_length(const char* field, std::size_t actual, std::size_t expected) {
  if (actual != expected) {
    throw std::invalid_argument(std::string(field) + ": expected " + std::to_string(expected) +
                                " values, got " + std::to_string(actual));
  }
}
}  // namespace

void Case::validate() const {
  if (n <= 0 || d <= 0 || k <= 0) {
    throw std::invalid_argument("shape: n, d and k must be positive, got n=" + std::to_string(n) +
                                " d=" + std::to_string(d) + " k=" + std::to_string(k));
  }
  if (num_shards < 1) {
    throw std::invalid_argument("num_shards: must be >= 1, got " + std::to_string(num_shards));
  }
  if (step < 0) throw std::invalid_argument("step: must be >= 0");
  const auto n_ = static_cast<std::size_t>(n), d_ = static_cast<std::size_t>(d),
             k_ = static_cast<std::size_t>(k);
  expect_length("kernel", kernel.size(), d_ * k_);
  expect_length("bias", bias.size(), k_);
  expect_length("x", x.size(), n_ * d_);
  expect_length("y", y.size(), n_ * k_);
}

}  // namespace sgdc
