#include "sgdc/reference/case.hpp"

#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

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
  for (auto [name, h] :
       {std::pair{"momentum", optimizer.momentum}, std::pair{"dampening", optimizer.dampening},
        std::pair{"weight_decay", optimizer.weight_decay}, std::pair{"b1", optimizer.b1},
        std::pair{"b2", optimizer.b2}, std::pair{"eps", optimizer.eps},
        std::pair{"eps_root", optimizer.eps_root},
        std::pair{"initial_accumulator_value", optimizer.initial_accumulator_value}}) {
    if (std::isfinite(h) && h != 0.0f && std::abs(h) < 0x1p-126f)
      throw std::invalid_argument(std::string(name) +
                                  ": a hyperparameter is 0 or a normal float32");
  }
  const bool adam = optimizer.kind == Optimizer::Kind::adam;
  const bool adagrad = optimizer.kind == Optimizer::Kind::adagrad;
  if (!adam && (optimizer.b1 != 0.0f || optimizer.b2 != 0.0f))
    throw std::invalid_argument("optimizer: b1 and b2 are Adam's alone");
  if (!adam && !adagrad && (optimizer.eps != 0.0f || optimizer.eps_root != 0.0f))
    throw std::invalid_argument("optimizer: eps and eps_root are Adam's and Adagrad's alone");
  if (!adagrad && optimizer.initial_accumulator_value != 0.0f)
    throw std::invalid_argument("optimizer: initial_accumulator_value is Adagrad's alone");
  // NaN and infinities are special values, judged as such; finite ones must lie in the
  // domain where the step is defined.
  auto outside = [](float h, bool ok) { return std::isfinite(h) && !ok; };
  if (adam) {
    if (outside(optimizer.b1, optimizer.b1 >= 0.0f && optimizer.b1 < 1.0f))
      throw std::invalid_argument("b1: must lie in [0, 1)");
    if (outside(optimizer.b2, optimizer.b2 >= 0.0f && optimizer.b2 < 1.0f))
      throw std::invalid_argument("b2: must lie in [0, 1)");
    if (outside(optimizer.eps, optimizer.eps > 0.0f))
      throw std::invalid_argument("eps: must be > 0 (Adam's denominator is at least eps)");
  }
  if (adagrad) {
    if (outside(optimizer.eps, optimizer.eps >= 0.0f))
      throw std::invalid_argument("eps: must be >= 0");
    // torch's eps outside the root or optax's inside it: one of them keeps the
    // denominator sqrt(s' + eps_root) + eps above 0 where the sum s' is 0.
    if (optimizer.eps == 0.0f && optimizer.eps_root == 0.0f)
      throw std::invalid_argument(
          "eps: eps and eps_root are both 0 (Adagrad's denominator needs one above 0)");
    if (outside(optimizer.initial_accumulator_value, optimizer.initial_accumulator_value >= 0.0f))
      throw std::invalid_argument("initial_accumulator_value: must be >= 0");
  }
  if (adam || adagrad) {
    const char* name = adam ? "Adam" : "Adagrad";
    if (outside(optimizer.eps_root, optimizer.eps_root >= 0.0f))
      throw std::invalid_argument("eps_root: must be >= 0");
    if (outside(optimizer.weight_decay, optimizer.weight_decay >= 0.0f))
      throw std::invalid_argument(std::string("weight_decay: must be >= 0 with ") + name);
    if (optimizer.momentum != 0.0f || optimizer.dampening != 0.0f || optimizer.nesterov)
      throw std::invalid_argument(std::string("optimizer: ") + name +
                                  " takes no momentum, dampening or Nesterov");
  }
  for (const auto* v : {&second_moment_kernel, &second_moment_bias})
    for (float f : *v)
      if (f < 0.0f)
        throw std::invalid_argument(std::string(v == &second_moment_kernel ? "second_moment_kernel"
                                                                           : "second_moment_bias") +
                                    ": a second moment is >= 0");
  if (optimizer.kind == Optimizer::Kind::sgd &&
      (optimizer.momentum != 0.0f || optimizer.dampening != 0.0f || optimizer.nesterov ||
       optimizer.weight_decay != 0.0f))
    throw std::invalid_argument(
        "optimizer: plain SGD takes no momentum, dampening, Nesterov or weight decay (a momentum "
        "optimizer with momentum 0 decays)");
  if (bias_group) {
    if (!bias_group->lr && !bias_group->weight_decay)
      throw std::invalid_argument("bias_group: declares neither lr nor weight_decay");
    for (auto [name, h] : {std::pair{"bias_lr", bias_group->lr},
                           std::pair{"bias_weight_decay", bias_group->weight_decay}}) {
      if (h && std::isfinite(*h) && *h != 0.0f && std::abs(*h) < 0x1p-126f)
        throw std::invalid_argument(std::string(name) +
                                    ": a hyperparameter is 0 or a normal float32");
    }
    if (const auto wd = bias_group->weight_decay) {
      if (optimizer.kind == Optimizer::Kind::sgd && *wd != 0.0f)
        throw std::invalid_argument(
            "bias_weight_decay: plain SGD takes no weight decay (a momentum optimizer with "
            "momentum 0 decays)");
      if ((adam || adagrad) && std::isfinite(*wd) && *wd < 0.0f)
        throw std::invalid_argument(std::string("bias_weight_decay: must be >= 0 with ") +
                                    (adam ? "Adam" : "Adagrad"));
    }
  }
  if (clip) {
    // Normal float32 values, so that the norm's bound (docs/error-model.md, section 17)
    // need not follow subnormal hyperparameters.
    if (!std::isfinite(clip->max_norm) || !(clip->max_norm >= 0x1p-126f))
      throw std::invalid_argument("clip_max_norm: must be a finite normal float32 > 0");
    if (!std::isfinite(clip->eps) || (clip->eps != 0.0f && !(clip->eps >= 0x1p-126f)))
      throw std::invalid_argument("clip_eps: must be 0 or a finite normal float32 > 0");
  }
  if (!fresh_state() && optimizer.kind == Optimizer::Kind::sgd)
    throw std::invalid_argument("momentum_kernel: optimizer state without a stateful optimizer");
  for (const InputArray& in : input_arrays) {
    const std::size_t expected = element_count(in.extent, n, d, k);
    const std::size_t actual = (this->*in.member).size();
    if (in.state && fresh_state()) continue;
    if (!in.kept_by(optimizer.kind)) {
      if (actual != 0)
        throw std::invalid_argument(std::string(in.name) + ": state that " +
                                    to_string(optimizer.kind) + " does not keep");
      continue;
    }
    if (actual != expected) {
      throw std::invalid_argument(std::string(in.name) + ": expected " + std::to_string(expected) +
                                  " values, got " + std::to_string(actual));
    }
  }
}

namespace {
constexpr std::pair<Optimizer::Decay, const char*> decay_names[] = {
    {Optimizer::Decay::coupled, "coupled"}, {Optimizer::Decay::decoupled, "decoupled"}};

template <class T, std::size_t N>
const char* name_of(const std::pair<T, const char*> (&names)[N], T value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}
template <class T, std::size_t N>
std::optional<T> value_of(const std::pair<T, const char*> (&names)[N], std::string_view name) {
  for (const auto& [v, text] : names)
    if (name == text) return v;
  return std::nullopt;
}
}  // namespace

const char* to_string(Optimizer::Kind kind) { return info(kind).name; }
const char* to_string(Optimizer::Decay decay) { return name_of(decay_names, decay); }
std::optional<Optimizer::Kind> parse_optimizer_kind(std::string_view name) {
  for (const OptimizerInfo& o : optimizer_table)
    if (name == o.name) return o.kind;
  return std::nullopt;
}
std::optional<Optimizer::Decay> parse_decay(std::string_view name) {
  return value_of(decay_names, name);
}

bool reports(const OutputInfo& info, const Case& c, bool grads) {
  switch (info.reported) {
    case Reported::always:
      return true;
    case Reported::with_grads:
      return grads;
    case Reported::with_buffer:
      return reference::info(c.optimizer.kind).buffer;
    case Reported::with_second_moment:
      return reference::info(c.optimizer.kind).second_moment;
  }
  return false;
}

Case bias_group_case(Case c) {
  if (!c.bias_group) return c;
  const ParamGroup g = *c.bias_group;
  c.bias_group.reset();
  if (g.lr) c.lr = *g.lr;
  if (g.weight_decay) c.optimizer.weight_decay = *g.weight_decay;
  return c;
}

Case kernel_group_case(Case c) {
  c.bias_group.reset();
  return c;
}

std::pair<std::int64_t, std::int64_t> split_part(std::int64_t count, int parts, int part) {
  const std::int64_t q = count / parts, r = count % parts;
  const std::int64_t begin = part * q + std::min<std::int64_t>(part, r);
  return {begin, begin + q + (part < r ? 1 : 0)};
}

bool has_nonfinite_input(const Case& c) {
  const Optimizer& o = c.optimizer;
  for (float h : {c.lr, o.momentum, o.dampening, o.weight_decay, o.b1, o.b2, o.eps, o.eps_root,
                  o.initial_accumulator_value})
    if (!std::isfinite(h)) return true;
  if (c.bias_group)
    for (const std::optional<float>& h : {c.bias_group->lr, c.bias_group->weight_decay})
      if (h && !std::isfinite(*h)) return true;
  for (const InputArray& in : input_arrays)
    for (float f : c.*in.member)
      if (!std::isfinite(f)) return true;
  return false;
}

Case with_nonfinite_as_zero(Case c) {
  for (const InputArray& in : input_arrays)
    for (float& f : c.*in.member)
      if (!std::isfinite(f)) f = 0.0f;
  Optimizer& o = c.optimizer;
  for (float* h : {&c.lr, &o.momentum, &o.dampening, &o.weight_decay, &o.b1, &o.b2, &o.eps_root,
                   &o.initial_accumulator_value})
    if (!std::isfinite(*h)) *h = 0.0f;
  if (c.bias_group)
    for (std::optional<float>* h : {&c.bias_group->lr, &c.bias_group->weight_decay})
      if (*h && !std::isfinite(**h)) **h = 0.0f;
  // eps must stay > 0: a non-finite eps reads as 1 (every output it reaches is poisoned).
  if (!std::isfinite(o.eps)) o.eps = 1.0f;
  // Adagrad's denominator needs eps or eps_root above 0.
  if (o.kind == Optimizer::Kind::adagrad && o.eps == 0.0f && o.eps_root == 0.0f) o.eps_root = 1.0f;
  return c;
}

void showValue(const Case& c, std::ostream& os) {
  os << "n=" << c.n << " d=" << c.d << " k=" << c.k << " num_shards=" << c.num_shards
     << " step=" << c.step << " lr=" << describe(c.lr);
  const Optimizer& o = c.optimizer;
  if (o.kind != Optimizer::Kind::sgd || o.weight_decay != 0.0f) {
    os << "\n  optimizer " << to_string(o.kind);
    if (o.kind == Optimizer::Kind::momentum)
      os << " momentum=" << describe(o.momentum) << " dampening=" << describe(o.dampening)
         << (o.nesterov ? " nesterov" : "") << (c.fresh_state() ? " (fresh state)" : "");
    if (o.kind == Optimizer::Kind::adam)
      os << " b1=" << describe(o.b1) << " b2=" << describe(o.b2) << " eps=" << describe(o.eps)
         << " eps_root=" << describe(o.eps_root) << (c.fresh_state() ? " (fresh state)" : "");
    if (o.kind == Optimizer::Kind::adagrad)
      os << " eps=" << describe(o.eps) << " eps_root=" << describe(o.eps_root)
         << " initial_accumulator_value=" << describe(o.initial_accumulator_value)
         << (c.fresh_state() ? " (fresh state)" : "");
    if (o.weight_decay != 0.0f)
      os << " weight_decay=" << describe(o.weight_decay) << " (" << to_string(o.decay) << ")";
  }
  if (c.bias_group) {
    os << "\n  bias group";
    if (c.bias_group->lr) os << " lr=" << describe(*c.bias_group->lr);
    if (c.bias_group->weight_decay) os << " weight_decay=" << describe(*c.bias_group->weight_decay);
  }
  if (c.clip)
    os << "\n  clip max_norm=" << describe(c.clip->max_norm) << " eps=" << describe(c.clip->eps);
  for (const InputArray& in : input_arrays) {
    const std::vector<float>& v = c.*in.member;
    if (in.state && v.empty()) continue;
    os << "\n  " << in.name << " = [";
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << describe(v[i]);
    os << "]";
  }
}

}  // namespace sgdc::reference
