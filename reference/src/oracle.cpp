#include "sgdc/reference/oracle.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "clipped_step.hpp"
#include "clipping_bound.hpp"
#include "optimizer_bound.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "staged_step.hpp"

namespace sgdc::reference {

namespace {
// Which outputs depend on a non-finite input: r_nk on row n of x, column k of W, b_k
// and y_nk; gW_dk on column d of x and column k of r; updates also on p and lr. Empty
// outputs when every input is finite, as is usual.
struct Poison {
  PerOutput<std::vector<char>> outputs;
  bool any = false;
};

bool bad(float v) { return !std::isfinite(v); }

// From flags per row and column of the inputs: O(N D + D K + N K).
Poison find_poison(const Case& c) {
  Poison p;
  if (!has_nonfinite_input(c)) return p;
  const int n = c.n, d = c.d, k = c.k;
  std::vector<char> x_row(static_cast<std::size_t>(n), 0), x_column(static_cast<std::size_t>(d), 0),
      kernel_column(static_cast<std::size_t>(k), 0);
  for (int i = 0; i < n; ++i) {
    for (int l = 0; l < d; ++l) {
      if (bad(c.x[static_cast<std::size_t>(i) * d + l])) x_row[i] = x_column[l] = 1;
    }
  }
  for (int l = 0; l < d; ++l) {
    for (int j = 0; j < k; ++j) {
      if (bad(c.kernel[static_cast<std::size_t>(l) * k + j])) kernel_column[j] = 1;
    }
  }
  // Column j of r: some r_nk poisoned.
  std::vector<char> column(static_cast<std::size_t>(k), 0);
  bool loss = false;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      const bool v = x_row[i] || kernel_column[j] || bad(c.bias[j]) ||
                     bad(c.y[static_cast<std::size_t>(i) * k + j]);
      column[j] = column[j] || v;
      loss = loss || v;
    }
  }
  const bool lr = bad(c.lr);
  auto& o = p.outputs;
  o.loss = {static_cast<char>(loss)};
  o.grad_kernel.assign(static_cast<std::size_t>(d) * k, 0);
  o.kernel.assign(o.grad_kernel.size(), 0);
  o.grad_bias.assign(static_cast<std::size_t>(k), 0);
  o.bias.assign(o.grad_bias.size(), 0);
  const Optimizer& opt = c.optimizer;
  const OptimizerInfo& kept = info(opt.kind);
  // Adam and Adagrad: through a square root.
  const bool adam = kept.second_moment;
  const bool adagrad = opt.kind == Optimizer::Kind::adagrad;
  const bool buffer = opt.kind != Optimizer::Kind::sgd && !c.fresh_state();
  if (kept.buffer) {
    o.momentum_kernel.assign(o.kernel.size(), 0);
    o.momentum_bias.assign(o.bias.size(), 0);
  }
  if (kept.second_moment) {
    o.second_moment_kernel.assign(o.kernel.size(), 0);
    o.second_moment_bias.assign(o.bias.size(), 0);
  }
  // Momentum: the buffer after the step reads the gradient, the parameter (decay) and the
  // buffer before; the parameter after it also reads lr.
  // Adam: the decayed gradient reads the gradient (and, coupled, the parameter and wd);
  // m' reads it, m and b1; v' reads it, v and b2; p' reads both, p, lr, eps, eps_root, wd.
  // Adagrad: v' reads ge and v (the initial value when fresh); p' reads ge, v', p, lr, eps,
  // eps_root, wd.
  const bool coupled_decay = opt.decay == Optimizer::Decay::coupled && opt.weight_decay != 0.0f;
  auto optimizer = [&](bool g, float param, const std::vector<float>& before,
                       const std::vector<float>& second, std::size_t e, char& out, char* buffer_out,
                       char* second_out) {
    if (adam) {
      const bool ge = g || (coupled_decay && bad(param)) || bad(opt.weight_decay);
      const bool m = ge || (!adagrad && buffer && bad(before[e])) || bad(opt.b1);
      const bool v = ge || (buffer && bad(second[e])) || bad(opt.b2) ||
                     (!buffer && bad(opt.initial_accumulator_value));
      if (buffer_out) *buffer_out = m;
      *second_out = v;
      out = m || v || bad(param) || lr || bad(opt.eps) || bad(opt.eps_root);
      return;
    }
    const bool b = g || bad(param) || (buffer && bad(before[e]));
    if (buffer_out) *buffer_out = b;
    out = b || lr;
  };
  for (int j = 0; j < k; ++j) {
    o.grad_bias[j] = column[j];
    optimizer(column[j], c.bias[j], c.momentum_bias, c.second_moment_bias, j, o.bias[j],
              kept.buffer ? &o.momentum_bias[j] : nullptr,
              kept.second_moment ? &o.second_moment_bias[j] : nullptr);
  }
  for (int l = 0; l < d; ++l) {
    for (int j = 0; j < k; ++j) {
      const std::size_t e = static_cast<std::size_t>(l) * k + j;
      const bool g = column[j] || x_column[l];
      o.grad_kernel[e] = g;
      optimizer(g, c.kernel[e], c.momentum_kernel, c.second_moment_kernel, e, o.kernel[e],
                kept.buffer ? &o.momentum_kernel[e] : nullptr,
                kept.second_moment ? &o.second_moment_kernel[e] : nullptr);
    }
  }
  // Some input is non-finite (the early return above): the outputs are computed with it
  // read as zero, even when it reaches no output through the loss or lr (a momentum
  // buffer's element reaches only its own parameter and buffer).
  p.any = true;
  return p;
}

bool poisons_a_gradient(const Poison& p) {
  for (const std::vector<char>* g : {&p.outputs.grad_kernel, &p.outputs.grad_bias})
    for (const char v : *g)
      if (v) return true;
  return false;
}

std::vector<double> magnitudes(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (const double v : values) out.push_back(std::abs(v));
  return out;
}

std::vector<double> magnitudes(const std::vector<RoundedValue>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (const RoundedValue& v : values) out.push_back(std::abs(v.value));
  return out;
}

// The magnitudes the bounds read, from the step's values rounded to double (the
// residuals empty where the step has none: the staged one).
ExactMagnitudes magnitudes_of(const RoundedStep& s) {
  ExactMagnitudes mag;
  mag.residual = magnitudes(s.residual);
  mag.grad_kernel = magnitudes(s.grad_kernel);
  mag.grad_bias = magnitudes(s.grad_bias);
  mag.kernel = magnitudes(s.kernel);
  mag.bias = magnitudes(s.bias);
  mag.momentum_kernel = magnitudes(s.momentum_kernel);
  mag.momentum_bias = magnitudes(s.momentum_bias);
  mag.second_moment_kernel = magnitudes(s.second_moment_kernel);
  mag.second_moment_bias = magnitudes(s.second_moment_bias);
  mag.loss = s.loss[0].value;
  return mag;
}

// `poison` empty: nothing poisoned.
std::vector<Expected> expected_of(const std::vector<RoundedValue>& values,
                                  const std::vector<ElementBound>& bounds,
                                  const std::vector<char>& poison) {
  std::vector<Expected> out;
  out.reserve(bounds.size());
  for (std::size_t e = 0; e < values.size(); ++e) {
    Expected x;
    x.rounded = values[e].rounded;
    x.value = values[e].value;
    // gamma_m is infinite where m u >= 1 (no bound exists); inf * 0 in its terms makes
    // NaN, which means the same.
    x.bound =
        std::isnan(bounds[e].bound) ? std::numeric_limits<double>::infinity() : bounds[e].bound;
    x.may_overflow = bounds[e].may_overflow;
    x.must_be_nonfinite = !poison.empty() && poison[e] != 0;
    out.push_back(x);
  }
  return out;
}

// Frees v's memory now.
template <class T>
void release(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

// Mixed precision by stage (docs/error-model.md, section 18): the loss and the reduced
// gradients from the staged simulation, where they lie; the optimizer's outputs exactly
// from the gradients' centers, bounded in the master weights' format from the gradients'
// radii. Into `values` and `bounds`, as the exact step and its bounds would be.
void staged_step(const Case& as_given, const ErrorModel& model, bool certified, RoundedStep& values,
                 StepBounds& bounds) {
  const StagedGradients staged = staged_gradients(as_given, model);
  // The optimizer reads the parameters and state as the master weights hold them: the
  // case's rounded to their format, exactly.
  const Format& master = model.stages.master;
  // A value beyond the format's range is held as +-inf: whatever reads it may be
  // anything (flagged below; the value itself kept for the finite others).
  std::optional<Case> stored;
  std::vector<char> kernel_over(as_given.kernel.size(), 0), bias_over(as_given.bias.size(), 0);
  if (master.narrower_than_float32()) {
    stored = as_given;
    for (auto [v, over] : {std::pair{&stored->kernel, &kernel_over},
                           {&stored->bias, &bias_over},
                           {&stored->momentum_kernel, &kernel_over},
                           {&stored->momentum_bias, &bias_over},
                           {&stored->second_moment_kernel, &kernel_over},
                           {&stored->second_moment_bias, &bias_over}}) {
      for (std::size_t e = 0; e < v->size(); ++e) {
        const double held = round_to_format((*v)[e], master);
        if (std::isinf(held))
          (*over)[e] = 1;
        else
          (*v)[e] = static_cast<float>(held);
      }
    }
  }
  const Case& c = stored ? *stored : as_given;
  auto value = [](const StagedValue& v) {
    return RoundedValue{static_cast<float>(v.center), v.center};
  };
  auto bound = [](const StagedValue& v) { return ElementBound{v.radius, v.may_overflow}; };
  values.loss = {value(staged.loss)};
  bounds.loss = {bound(staged.loss)};
  for (const auto& [from, into, into_bounds] :
       {std::tuple{&staged.grad_kernel, &values.grad_kernel, &bounds.grad_kernel},
        std::tuple{&staged.grad_bias, &values.grad_bias, &bounds.grad_bias}}) {
    into->reserve(from->size());
    into_bounds->reserve(from->size());
    for (const StagedValue& v : *from) {
      into->push_back(value(v));
      into_bounds->push_back(bound(v));
    }
  }
  // The certified optimizer from the centres (section 11's double words), else the exact
  // one in rationals: the same values bit for bit.
  std::optional<RoundedStep> fast;
  if (certified) {
    std::vector<double> gk, gb;
    for (const RoundedValue& v : values.grad_kernel) gk.push_back(v.value);
    for (const RoundedValue& v : values.grad_bias) gb.push_back(v.value);
    fast = certified_optimizer(c, gk, gb);
  }
  if (fast) {
    for (Output o : {Output::kernel, Output::bias, Output::momentum_kernel, Output::momentum_bias,
                     Output::second_moment_kernel, Output::second_moment_bias})
      values[o] = std::move((*fast)[o]);
  } else {
    // The exact gradients are the staged ones' centres.
    StepValues<Rational> exact;
    exact.grad_kernel.resize(c.d, c.k);
    exact.grad_bias.resize(1, c.k);
    for (std::size_t e = 0; e < staged.grad_kernel.size(); ++e)
      exact.grad_kernel.data()[e] = Rational(staged.grad_kernel[e].center);
    for (std::size_t e = 0; e < staged.grad_bias.size(); ++e)
      exact.grad_bias.data()[e] = Rational(staged.grad_bias[e].center);
    if (!c.clip) {
      Matrix<Rational> w(c.d, c.k), b(1, c.k);
      for (std::size_t e = 0; e < c.kernel.size(); ++e)
        w.data()[e] = Rational(static_cast<double>(c.kernel[e]));
      for (std::size_t e = 0; e < c.bias.size(); ++e)
        b.data()[e] = Rational(static_cast<double>(c.bias[e]));
      apply_optimizer(c, w, b, exact.grad_kernel, exact.grad_bias, exact);
    }
    round_optimizer_outputs(c, exact, values);
    values.fallback_elements = values.elements();
    values.exact_evaluated = true;
  }

  const ExactMagnitudes mag = magnitudes_of(values);
  // The optimizer runs on the master weights: in their format, float32's u when float32.
  const ErrorModel optimizer_model{
      .u = master.narrower_than_float32() ? master.unit_roundoff() : model.u,
      .subnormals = model.subnormals,
      .format = master};
  apply_stored_gradient_bounds(c, mag, optimizer_model, bounds);
  if (c.clip) apply_clipping_bounds(c, mag, optimizer_model, bounds);
  // The state as stored: a fresh buffer is a copy of the gradient, which the master
  // weights' format rounds once more.
  if (stored) {
    const double unit = master.unit_roundoff();
    for (Output o : {Output::momentum_kernel, Output::momentum_bias, Output::second_moment_kernel,
                     Output::second_moment_bias})
      for (std::size_t e = 0; e < bounds[o].size(); ++e)
        bounds[o][e].bound += unit * (std::abs(values[o][e].value) + bounds[o][e].bound);
  }
  for (auto [over, outputs] :
       {std::pair{&kernel_over, std::array{Output::kernel, Output::momentum_kernel,
                                           Output::second_moment_kernel}},
        std::pair{&bias_over,
                  std::array{Output::bias, Output::momentum_bias, Output::second_moment_bias}}})
    for (Output o : outputs)
      for (std::size_t e = 0; e < bounds[o].size() && e < over->size(); ++e)
        if ((*over)[e]) bounds[o][e] = {std::numeric_limits<double>::infinity(), true};
  // update_rule reads p - lr g from the case's own p: the stored one differs by this.
  for (std::size_t e = 0; stored && e < c.kernel.size(); ++e)
    bounds.kernel_from_grad[e] += std::abs(static_cast<double>(as_given.kernel[e]) - c.kernel[e]);
  for (std::size_t e = 0; stored && e < c.bias.size(); ++e)
    bounds.bias_from_grad[e] += std::abs(static_cast<double>(as_given.bias[e]) - c.bias[e]);
}

Expectation expect_with(const Case& c, const ErrorModel& model,
                        RoundedStep (*evaluate)(const Case&)) {
  c.validate();
  if (const std::string problem = format_problem(model.format); !problem.empty())
    throw std::invalid_argument("compute format: " + problem);
  if (const std::string problem = stages_problem(model.stages); !problem.empty())
    throw std::invalid_argument("precision: " + problem);
  const bool staged = model.stages.declared();
  if (staged && model.format.narrower_than_float32())
    throw std::invalid_argument("precision: stages and a compute format " +
                                to_string(model.format) + " both declared; declare one");
  const Poison poison = find_poison(c);
  // Outputs that do not depend on the non-finite inputs are computed with those inputs
  // read as zero, which leaves them unchanged. A finite case is used as it is, not copied.
  std::optional<Case> zeroed;
  if (poison.any) zeroed = with_nonfinite_as_zero(c);
  const Case& finite = zeroed ? *zeroed : c;
  RoundedStep exact;
  StepBounds bounds;
  if (staged) {
    staged_step(finite, model, evaluate != round_exact_step, exact, bounds);
  } else {
    exact = evaluate(finite);
    const ExactMagnitudes mag = magnitudes_of(exact);
    bounds = error_bounds(finite, mag, model);
    apply_optimizer_bounds(finite, mag, model, bounds);
    if (finite.clip) apply_clipping_bounds(finite, mag, model, bounds);
  }  // the magnitudes go before the expectation grows

  // Each output's values and bounds go once its expectation is built: at most one
  // kernel-shaped expectation is built while both kernel-shaped sources are alive.
  Expectation out;
  for (Output o : all_outputs) {
    out[o] = expected_of(exact[o], bounds[o], poison.outputs[o]);
    release(exact[o]);
    release(bounds[o]);
  }
  out.kernel_from_grad = std::move(bounds.kernel_from_grad);
  out.bias_from_grad = std::move(bounds.bias_from_grad);
  out.u = operation_model(model).u;
  if (c.clip && poisons_a_gradient(poison)) {
    // A non-finite gradient makes the norm non-finite: the clip factor is then NaN, or 0
    // (an infinite norm) which leaves the finite elements' parameters unmoved. The step
    // defines neither (docs/spec/step.md, "Gradient clipping"): whatever reads the
    // factor is not judged.
    for (Output o : all_outputs) {
      if (o == Output::loss || o == Output::grad_kernel || o == Output::grad_bias) continue;
      for (Expected& x : out[o]) {
        x.bound = std::numeric_limits<double>::infinity();
        x.may_overflow = true;
        x.must_be_nonfinite = false;
      }
    }
  }
  return out;
}

// With a bias group: every output from the case without it, then the bias's extent
// (its values, bounds and U2 slack) from the case the bias group sees. The bias gradient,
// the same in both, comes with them.
Expectation expect_grouped(const Case& c, const ErrorModel& model,
                           RoundedStep (*evaluate)(const Case&)) {
  if (!c.bias_group) return expect_with(c, model, evaluate);
  c.validate();
  Expectation out = expect_with(kernel_group_case(c), model, evaluate);
  Expectation bias = expect_with(bias_group_case(c), model, evaluate);
  take_bias_outputs<std::vector<Expected>>(out, std::move(bias));
  out.bias_from_grad = std::move(bias.bias_from_grad);
  return out;
}
}  // namespace

Expectation expect(const Case& c, const ErrorModel& model) {
  return expect_grouped(c, model, certified_step);
}

Expectation expect_exact(const Case& c, const ErrorModel& model) {
  return expect_grouped(c, model, round_exact_step);
}

}  // namespace sgdc::reference
