#include "sgdc/conformance/regression/derive.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "fixture_optimizer.hpp"
#include "sgdc/conformance/regression/exact_value.hpp"
#include "sgdc/conformance/regression/fixture_error.hpp"
#include "sgdc/reference/counter.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/float32.hpp"

namespace sgdc::conformance::regression {

namespace {

// The exact outputs the oracle rounds: non-finite inputs read as zero, as expect() does
// for the outputs that do not depend on them (the others are flagged must_be_nonfinite);
// with a bias group, the bias's from the case its group sees. Adam's and Adagrad's
// parameters, through a square root, as exact_adam_parameters gives them; everything else
// rational.
using ExactOutputs = reference::PerOutput<std::vector<reference::ExactValue>>;
ExactOutputs exact_group_outputs(const reference::Case& c);

ExactOutputs exact_outputs(const reference::Case& c) {
  if (!c.bias_group) return exact_group_outputs(c);
  ExactOutputs out = exact_group_outputs(reference::kernel_group_case(c));
  ExactOutputs bias = exact_group_outputs(reference::bias_group_case(c));
  reference::take_bias_outputs(out, std::move(bias));
  return out;
}

ExactOutputs exact_group_outputs(const reference::Case& case_) {
  const reference::Case c = reference::with_nonfinite_as_zero(case_);
  const auto v = reference::evaluate_step<reference::Rational>(c);
  auto elements = [](const reference::Matrix<reference::Rational>& m) {
    std::vector<reference::ExactValue> out;
    for (Eigen::Index i = 0; i < m.size(); ++i) out.push_back({.rational = m.data()[i]});
    return out;
  };
  ExactOutputs out;
  out.loss = {{.rational = v.loss}};
  out.kernel = elements(v.kernel);
  out.bias = elements(v.bias);
  out.grad_kernel = elements(v.grad_kernel);
  out.grad_bias = elements(v.grad_bias);
  out.momentum_kernel = elements(v.momentum_kernel);
  out.momentum_bias = elements(v.momentum_bias);
  out.second_moment_kernel = elements(v.second_moment_kernel);
  out.second_moment_bias = elements(v.second_moment_bias);
  if (c.clip) {
    // The optimizer reads the clipped gradients: its outputs in Q(sqrt(S)).
    reference::PerOutput<std::vector<reference::ExactValue>> clipped =
        reference::exact_clipped_outputs(c, decimal_digits);
    for (reference::Output o : reference::all_outputs)
      if (o != reference::Output::loss && o != reference::Output::grad_kernel &&
          o != reference::Output::grad_bias)
        out[o] = std::move(clipped[o]);
  } else if (reference::info(c.optimizer.kind).second_moment) {
    reference::AdamParameters p = reference::exact_adam_parameters(c, decimal_digits);
    out.kernel = std::move(p.kernel);
    out.bias = std::move(p.bias);
  }
  return out;
}

// Each expected value (a double) as an exact value.
ExactOutputs expected_values(const reference::Expectation& e) {
  ExactOutputs out;
  for (reference::Output o : reference::all_outputs)
    for (const reference::Expected& x : e[o])
      out[o].push_back({.rational = reference::Rational(std::isfinite(x.value) ? x.value : 0.0)});
  return out;
}

ExpectedOutput expected_output(const std::vector<reference::Expected>& e,
                               const std::vector<reference::ExactValue>& exact, bool rational,
                               reference::Output o) {
  ExpectedOutput out;
  if (exact.size() != e.size())
    throw std::logic_error(
        fmt::format("{}: {} exact values for {} elements", to_string(o), exact.size(), e.size()));
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (!std::isfinite(e[i].bound))
      throw std::invalid_argument(fmt::format("{}[{}]: the bound is not finite", to_string(o), i));
    out.expected.push_back(e[i].rounded);
    out.exact.push_back(decimal_text(exact[i]));
    if (rational) out.exact_rational.push_back(rational_text(*exact[i].rational));
    out.bound.push_back(e[i].bound);
    if (e[i].may_overflow) out.may_overflow.push_back(i);
    if (e[i].must_be_nonfinite) out.must_be_nonfinite.push_back(i);
  }
  return out;
}

[[noreturn]] void corrupt(const std::string& file, const std::string& field,
                          const std::string& reason) {
  throw FixtureError(FixtureError::Kind::corrupt, file, field, reason);
}

std::string indices(const std::vector<std::size_t>& v) {
  return v.empty() ? "none" : fmt::format("[{}]", fmt::join(v, ", "));
}

void compare_output(const ExpectedOutput& stored, const ExpectedOutput& oracle,
                    const std::string& file, const std::string& path) {
  for (std::size_t i = 0; i < oracle.expected.size(); ++i) {
    if (!reference::same_bits(stored.expected[i], oracle.expected[i]))
      corrupt(file, fmt::format("{}.expected[{}]", path, i),
              fmt::format("stored {}, but the oracle rounds the exact value to {}",
                          reference::describe(stored.expected[i]),
                          reference::describe(oracle.expected[i])));
    if (i < oracle.exact_rational.size() && stored.exact_rational[i] != oracle.exact_rational[i])
      corrupt(file, fmt::format("{}.exact_rational[{}]", path, i),
              fmt::format("stored {}, but the oracle says {}", stored.exact_rational[i],
                          oracle.exact_rational[i]));
    if (stored.exact[i] != oracle.exact[i])
      corrupt(file, fmt::format("{}.exact[{}]", path, i),
              fmt::format("stored {}, but the oracle says {}", stored.exact[i], oracle.exact[i]));
    // The bound is a double computed from doubles; allow for another machine's last bits.
    const double b = oracle.bound[i];
    if (!(std::abs(stored.bound[i] - b) <= 0x1p-20 * b))
      corrupt(file, fmt::format("{}.bound[{}]", path, i),
              fmt::format("stored {:.17g}, but the oracle derives {:.17g}", stored.bound[i], b));
  }
  if (stored.may_overflow != oracle.may_overflow)
    corrupt(file, path + ".may_overflow",
            fmt::format("stored {}, but the oracle flags {}", indices(stored.may_overflow),
                        indices(oracle.may_overflow)));
  if (stored.must_be_nonfinite != oracle.must_be_nonfinite)
    corrupt(file, path + ".must_be_nonfinite",
            fmt::format("stored {}, but the oracle flags {}", indices(stored.must_be_nonfinite),
                        indices(oracle.must_be_nonfinite)));
}

}  // namespace

Fixture derive_fixture(std::string name, std::string description, const reference::Case& inputs,
                       Provenance provenance, const reference::ErrorModel& arithmetic) {
  Fixture f;
  f.name = std::move(name);
  f.description = std::move(description);
  f.inputs = inputs;
  f.arithmetic = arithmetic;
  f.provenance = std::move(provenance);
  const reference::Expectation e = expect(inputs, arithmetic);
  // With precision stages, the value the stages determine, as a double (docs/fixtures.md).
  const auto exact = arithmetic.stages.declared() ? expected_values(e) : exact_outputs(inputs);
  for (reference::Output o : reference::all_outputs)
    f.outputs[o] =
        expected_output(e[o], exact[o], detail::has_exact_rational(inputs, arithmetic, o), o);
  f.step = reference::next_count(reference::Counter{}, inputs.step);
  return f;
}

void verify_against_oracle(const Fixture& f, const std::string& file) {
  Fixture oracle;
  try {
    oracle = derive_fixture(f.name, f.description, f.inputs, f.provenance, f.arithmetic);
  } catch (const std::invalid_argument& e) {
    // Inputs the oracle refuses (Case::validate), or a bound JSON cannot hold: the file is
    // unusable, and the error names it.
    throw FixtureError(FixtureError::Kind::malformed, file, "inputs", e.what());
  }
  for (reference::Output o : reference::all_outputs)
    compare_output(f.outputs[o], oracle.outputs[o], file, std::string("outputs.") + to_string(o));
  if (f.step != oracle.step)
    corrupt(file, "outputs.step",
            fmt::format("stored {}, but the counter after the update is {}", f.step, oracle.step));
}

}  // namespace sgdc::conformance::regression