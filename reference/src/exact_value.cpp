#include "sgdc/reference/exact_value.hpp"

#include <stdexcept>
#include <string>

#include "adam_update.hpp"
#include "clipped_step.hpp"
#include "sgdc/reference/exact_step.hpp"

namespace sgdc::reference {

AdamParameters exact_adam_parameters(const Case& c, int digits) {
  const bool adagrad = c.optimizer.kind == Optimizer::Kind::adagrad;
  if (c.optimizer.kind != Optimizer::Kind::adam && !adagrad)
    throw std::invalid_argument("exact_adam_parameters: not an Adam or Adagrad case");
  if (c.clip) throw std::invalid_argument("exact_adam_parameters: a clipped case");
  // The moments after the step are rational; only the parameters need the enclosure.
  // Adagrad's m' is the decayed gradient ge (its coupled decay inside, docs/spec/step.md).
  StepValues<Rational> v = evaluate_step<Rational>(c);
  if (adagrad) {
    const bool coupled = c.optimizer.decay == Optimizer::Decay::coupled;
    const Rational wd(static_cast<double>(c.optimizer.weight_decay));
    auto decayed = [&](const Matrix<Rational>& g, const std::vector<float>& p) {
      Matrix<Rational> ge = g;
      if (coupled)
        for (Eigen::Index i = 0; i < ge.size(); ++i)
          ge.data()[i] += wd * Rational(static_cast<double>(p[static_cast<std::size_t>(i)]));
      return ge;
    };
    v.momentum_kernel = decayed(v.grad_kernel, c.kernel);
    v.momentum_bias = decayed(v.grad_bias, c.bias);
  }
  const AdamUpdate adam(c);
  auto parameters = [&](const char* name, const std::vector<float>& p, const Matrix<Rational>& m,
                        const Matrix<Rational>& s) {
    std::vector<ExactValue> out;
    out.reserve(p.size());
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      for (Eigen::Index j = 0; j < m.cols(); ++j) {
        const std::size_t e = static_cast<std::size_t>(i * m.cols() + j);
        try {
          out.push_back(adam.exact(p[e], m(i, j), s(i, j), digits));
        } catch (const std::runtime_error& error) {
          throw std::runtime_error(std::string(name) + "[" + std::to_string(e) +
                                   "]: " + error.what());
        }
      }
    }
    return out;
  };
  AdamParameters out;
  out.kernel = parameters("kernel", c.kernel, v.momentum_kernel, v.second_moment_kernel);
  out.bias = parameters("bias", c.bias, v.momentum_bias, v.second_moment_bias);
  return out;
}

PerOutput<std::vector<ExactValue>> exact_clipped_outputs(const Case& c, int digits) {
  if (!c.clip) throw std::invalid_argument("exact_clipped_outputs: a case without clipping");
  return clipped_optimizer_outputs<ExactValue>(
      c, evaluate_step<Rational>(c),
      [digits](const Quadratic& x) { return exact_value(x, digits); },
      [digits](const AdamUpdate& update, float p, const Quadratic& m, const Quadratic& v) {
        return update.exact(p, m, v, digits);
      });
}

}  // namespace sgdc::reference
