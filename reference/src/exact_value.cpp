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
  const StepValues<Rational> exact = evaluate_step<Rational>(c);
  const ClipFactor clip(c, exact.grad_kernel, exact.grad_bias);
  auto quadratic = [](const auto& m, const Quadratic& factor) {
    Matrix<Quadratic> out(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.size(); ++i) out.data()[i] = Quadratic(m.data()[i]) * factor;
    return out;
  };
  auto parameter = [](const std::vector<float>& p, Eigen::Index rows, Eigen::Index cols) {
    Matrix<Quadratic> out(rows, cols);
    for (Eigen::Index i = 0; i < out.size(); ++i)
      out.data()[i] = Quadratic(Rational(static_cast<double>(p[static_cast<std::size_t>(i)])));
    return out;
  };
  const Matrix<Quadratic> gk = quadratic(exact.grad_kernel, clip.factor),
                          gb = quadratic(exact.grad_bias, clip.factor);
  StepValues<Quadratic> v;
  apply_optimizer(c, parameter(c.kernel, c.d, c.k), parameter(c.bias, 1, c.k), gk, gb, v);
  auto values = [&](const char* name, const Matrix<Quadratic>& m) {
    std::vector<ExactValue> out;
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      try {
        out.push_back(exact_value(m.data()[i], digits));
      } catch (const std::runtime_error& error) {
        throw std::runtime_error(std::string(name) + "[" + std::to_string(i) +
                                 "]: " + error.what());
      }
    }
    return out;
  };
  PerOutput<std::vector<ExactValue>> out;
  out.momentum_kernel = values("momentum_kernel", v.momentum_kernel);
  out.momentum_bias = values("momentum_bias", v.momentum_bias);
  out.second_moment_kernel = values("second_moment_kernel", v.second_moment_kernel);
  out.second_moment_bias = values("second_moment_bias", v.second_moment_bias);
  const Optimizer& o = c.optimizer;
  if (!info(o.kind).second_moment) {
    out.kernel = values("kernel", v.kernel);
    out.bias = values("bias", v.bias);
    return out;
  }
  // Adam's and Adagrad's parameters through their square root; Adagrad's numerator is the
  // decayed clipped gradient.
  const AdamUpdate update(c);
  const bool adagrad = o.kind == Optimizer::Kind::adagrad;
  const bool coupled = o.decay == Optimizer::Decay::coupled && o.weight_decay != 0.0f;
  const Quadratic wd(Rational(static_cast<double>(o.weight_decay)));
  auto parameters = [&](const char* name, const std::vector<float>& p, const Matrix<Quadratic>& g,
                        const Matrix<Quadratic>& m, const Matrix<Quadratic>& second) {
    std::vector<ExactValue> result;
    for (Eigen::Index e = 0; e < second.size(); ++e) {
      const float pe = p[static_cast<std::size_t>(e)];
      const Quadratic numerator =
          !adagrad  ? m.data()[e]
          : coupled ? g.data()[e] + wd * Quadratic(Rational(static_cast<double>(pe)))
                    : g.data()[e];
      try {
        result.push_back(update.exact(pe, numerator, second.data()[e], digits));
      } catch (const std::runtime_error& error) {
        throw std::runtime_error(std::string(name) + "[" + std::to_string(e) +
                                 "]: " + error.what());
      }
    }
    return result;
  };
  out.kernel = parameters("kernel", c.kernel, gk, v.momentum_kernel, v.second_moment_kernel);
  out.bias = parameters("bias", c.bias, gb, v.momentum_bias, v.second_moment_bias);
  return out;
}

}  // namespace sgdc::reference
