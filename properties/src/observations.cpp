#include "sgdc/properties/observations.hpp"

#include <algorithm>
#include <cmath>

namespace sgdc::properties {

namespace {
void add(Observations::Worst& w, const Observations::Worst& more) {
  w.seen = w.seen || more.seen;
  w.ratio = std::max(w.ratio, more.ratio);
  if (more.ulps) w.ulps = std::max(w.ulps.value_or(0), *more.ulps);
}
}  // namespace

void Observations::record(reference::Output o, const reference::ElementCheck& c) {
  Worst seen;
  seen.seen = true;
  if (std::isfinite(c.ratio)) seen.ratio = c.ratio;
  if (c.bound_ulps <= ulp_scale) seen.ulps = c.ulps;
  add(per_output[o], seen);
}

void Observations::merge(const Observations& later) {
  for (reference::Output o : reference::all_outputs) add(per_output[o], later.per_output[o]);
  if (later.shard_storage &&
      (!shard_storage || later.shard_storage->state_tensors >= shard_storage->state_tensors))
    shard_storage = later.shard_storage;
}

Observations::Worst Observations::overall() const {
  Worst out;
  for (reference::Output o : reference::all_outputs) add(out, per_output[o]);
  return out;
}

}  // namespace sgdc::properties
