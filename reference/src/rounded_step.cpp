#include "sgdc/reference/rounded_step.hpp"

#include "adam_update.hpp"
#include "clipped_step.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {

std::size_t RoundedStep::elements() const {
  std::size_t n = residual.size();
  for (Output o : all_outputs) n += (*this)[o].size();
  return n;
}

namespace {
RoundedValue round_both(const Rational& q) { return {round_to_float32(q), round_to_double(q)}; }

template <class M>
std::vector<RoundedValue> round_all(const M& m) {
  std::vector<RoundedValue> out;
  out.reserve(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    for (Eigen::Index j = 0; j < m.cols(); ++j) out.push_back(round_both(m(i, j)));
  }
  return out;
}
}  // namespace

void round_optimizer_outputs(const Case& c, const StepValues<Rational>& exact, RoundedStep& s) {
  if (c.clip) {
    // The optimizer reads the clipped gradients, in Q(sqrt S) (clipped_step.hpp).
    round_clipped_optimizer(c, exact, s);
    return;
  }
  s.kernel = round_all(exact.kernel);
  s.bias = round_all(exact.bias);
  s.momentum_kernel = round_all(exact.momentum_kernel);
  s.momentum_bias = round_all(exact.momentum_bias);
  s.second_moment_kernel = round_all(exact.second_moment_kernel);
  s.second_moment_bias = round_all(exact.second_moment_bias);
  const Optimizer& o = c.optimizer;
  if (o.kind == Optimizer::Kind::adam || o.kind == Optimizer::Kind::adagrad) {
    // The parameters through Adam's or Adagrad's square root: enclosed until one float32
    // holds them. Adagrad's numerator is the decayed gradient ge.
    const AdamUpdate update(c);
    const bool adagrad = o.kind == Optimizer::Kind::adagrad;
    const bool coupled = o.decay == Optimizer::Decay::coupled && o.weight_decay != 0.0f;
    const Rational wd(static_cast<double>(o.weight_decay));
    auto parameters = [&](const std::vector<float>& p, const auto& g, const auto& m,
                          const auto& v) {
      std::vector<RoundedValue> out(p.size());
      for (Eigen::Index i = 0; i < v.rows(); ++i) {
        for (Eigen::Index j = 0; j < v.cols(); ++j) {
          const std::size_t e = static_cast<std::size_t>(i * v.cols() + j);
          const Rational numerator =
              !adagrad  ? Rational(m(i, j))
              : coupled ? Rational(g(i, j) + wd * Rational(static_cast<double>(p[e])))
                        : Rational(g(i, j));
          out[e] = update.parameter(p[e], numerator, v(i, j));
        }
      }
      return out;
    };
    s.kernel =
        parameters(c.kernel, exact.grad_kernel, exact.momentum_kernel, exact.second_moment_kernel);
    s.bias = parameters(c.bias, exact.grad_bias, exact.momentum_bias, exact.second_moment_bias);
  }
}

RoundedStep round_exact_step(const Case& c) {
  const StepValues<Rational> exact = evaluate_step<Rational>(c);
  RoundedStep s;
  s.residual.reserve(static_cast<std::size_t>(exact.residual.size()));
  for (Eigen::Index i = 0; i < exact.residual.rows(); ++i) {
    for (Eigen::Index j = 0; j < exact.residual.cols(); ++j) {
      s.residual.push_back(round_to_double(exact.residual(i, j)));
    }
  }
  s.loss = {round_both(exact.loss)};
  s.grad_kernel = round_all(exact.grad_kernel);
  s.grad_bias = round_all(exact.grad_bias);
  round_optimizer_outputs(c, exact, s);
  s.fallback_elements = s.elements();
  s.exact_evaluated = true;
  return s;
}

}  // namespace sgdc::reference
