#include "sgdc/reference/case.hpp"

#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>

#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {

void Case::validate() const {
  if (n <= 0 || d <= 0 || k <= 0) {
    throw std::invalid_argument("shape: n, d and k must be positive, got n=" + std::to_string(n) +
                                " d=" + std::to_string(d) + " k=" + std::to_string(k));
  }
  if (num_shards < 1) {
    throw std::invalid_argument("num_shards: must be >= 1, got " + std::to_string(num_shards));
  }
  if (step < 0) throw std::invalid_argument("step: must be >= 0");
  for (const InputArray& in : input_arrays) {
    const std::size_t expected = element_count(in.extent, n, d, k);
    const std::size_t actual = (this->*in.member).size();
    if (actual != expected) {
      throw std::invalid_argument(std::string(in.name) + ": expected " + std::to_string(expected) +
                                  " values, got " + std::to_string(actual));
    }
  }
}

bool has_nonfinite_input(const Case& c) {
  if (!std::isfinite(c.lr)) return true;
  for (const InputArray& in : input_arrays)
    for (float f : c.*in.member)
      if (!std::isfinite(f)) return true;
  return false;
}

Case with_nonfinite_as_zero(Case c) {
  for (const InputArray& in : input_arrays)
    for (float& f : c.*in.member)
      if (!std::isfinite(f)) f = 0.0f;
  if (!std::isfinite(c.lr)) c.lr = 0.0f;
  return c;
}

void showValue(const Case& c, std::ostream& os) {
  os << "n=" << c.n << " d=" << c.d << " k=" << c.k << " num_shards=" << c.num_shards
     << " step=" << c.step << " lr=" << describe(c.lr);
  for (const InputArray& in : input_arrays) {
    const std::vector<float>& v = c.*in.member;
    os << "\n  " << in.name << " = [";
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << describe(v[i]);
    os << "]";
  }
}

}  // namespace sgdc::reference
