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

void Observations::merge(const Observations& other) {
  for (std::size_t i = 0; i < per_output.size(); ++i) {
    const Worst& o = other.per_output[i];
    Worst& w = per_output[i];
    w.seen = w.seen || o.seen;
    w.ratio = std::max(w.ratio, o.ratio);
    w.ulps = std::max(w.ulps, o.ulps);
  }
  if (other.shard_storage) shard_storage = other.shard_storage;
}

}  // namespace sgdc
