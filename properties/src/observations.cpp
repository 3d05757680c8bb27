#include "sgdc/properties/observations.hpp"

#include <algorithm>
#include <cmath>

namespace sgdc {

void Observations::record(Output o, const ElementCheck& c) {
  Worst& w = per_output[static_cast<int>(o)];
  w.seen = true;
  if (std::isfinite(c.ratio)) w.ratio = std::max(w.ratio, c.ratio);
  if (c.ulps != UINT64_MAX) w.ulps = std::max(w.ulps, c.ulps);
}

Observations::Worst Observations::overall() const {
  Worst out;
  for (const Worst& w : per_output) {
    out.seen = out.seen || w.seen;
    out.ratio = std::max(out.ratio, w.ratio);
    out.ulps = std::max(out.ulps, w.ulps);
  }
  return out;
}

}  // namespace sgdc
