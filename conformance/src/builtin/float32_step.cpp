#include "sgdc/conformance/builtin/float32_step.hpp"

#include "staged_step.hpp"

#include "adagrad_step.hpp"
#include "adam_step.hpp"
#include "clip_gradients.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "sgdc/reference/counter.hpp"

namespace sgdc::conformance::builtin {

namespace {

// Row ranges [begin, end) of an even split of `rows` into `parts`, as numpy's
// array_split makes them (the first rows % parts parts get one row more); empty
// parts are left out unless every part is empty.
std::vector<std::pair<int, int>> split_rows(int rows, int parts) {
  std::vector<std::pair<int, int>> out;
  int begin = 0;
  for (int p = 0; p < parts; ++p) {
    const int size = rows / parts + (p < rows % parts ? 1 : 0);
    if (size > 0) out.emplace_back(begin, begin + size);
    begin += size;
  }
  if (out.empty()) out.emplace_back(0, 0);  // no rows at all: one empty part
  return out;
}

template <class T>
T add_pairwise(const T* t, std::size_t m) {
  if (m == 0) return T(0);
  if (m == 1) return t[0];
  const std::size_t half = m / 2;
  return add_pairwise(t, half) + add_pairwise(t + half, m - half);
}

bool coin_flip() {
  static std::mutex mutex;
  static std::mt19937 rng{std::random_device{}()};
  const std::lock_guard lock(mutex);
  return (rng() & 1u) != 0;
}

template <class T>
T add(const std::vector<T>& t, Order order, Bug bug) {
  if (bug == Bug::nondeterministic) order = coin_flip() ? Order::reversed : Order::sequential;
  T s(0);
  switch (order) {
    case Order::reversed:
      for (std::size_t i = t.size(); i-- > 0;) s += t[i];
      return s;
    case Order::pairwise:
      return add_pairwise(t.data(), t.size());
    default:
      for (const T& v : t) s += v;
      return s;
  }
}

// The counter after the step: an int64 that saturates at its largest value (the
// declared counter of every built-in), or as a counter bug keeps it.
std::int64_t next_step(std::int64_t step, Bug bug) {
  switch (bug) {
    case Bug::step_not_advanced:
      return step;
    case Bug::float32_counter:
      return static_cast<std::int64_t>(static_cast<float>(step) + 1.0f);
    case Bug::int32_counter:
      // Two's complement wrap of a 32-bit counter (what int32 arithmetic does in practice).
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(step) + 1u);
    default:
      return reference::next_count(builtin_counter, step);
  }
}

// SGD with momentum from the gradient g, elementwise in `Wide` (float, or double for a
// buffer kept wide): the buffer after the step into `buffer_out`, and the direction d of
// p' = p - lr d. Plain SGD: d = g. Momentum bugs as `bug` says.
template <class Wide, class G>
std::vector<Wide> direction(const reference::Case& c, const std::vector<float>& p,
                            const std::vector<G>& g, const std::vector<float>& buffer_in,
                            std::vector<float>& buffer_out, Bug bug) {
  const reference::Optimizer& o = c.optimizer;
  std::vector<Wide> d(g.begin(), g.end());
  if (o.kind != reference::Optimizer::Kind::momentum) return d;
  bool decoupled = o.decay == reference::Optimizer::Decay::decoupled;
  if (bug == Bug::decay_convention_swapped) decoupled = !decoupled;
  const Wide wd = o.weight_decay, mu = o.momentum,
             keep = Wide(1) - Wide(reference::applied_dampening(o));
  const bool fresh = c.fresh_state() || bug == Bug::fresh_buffer_every_step;
  buffer_out.resize(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Wide ge = decoupled ? Wide(g[i]) : Wide(g[i]) + wd * Wide(p[i]);
    const Wide before = fresh ? Wide(0) : Wide(buffer_in[i]);
    Wide b = fresh ? ge : mu * before + keep * ge;
    // The bug dampens whatever the momentum, as code that always applies it does.
    if (fresh && bug == Bug::dampening_on_first_step) b = (Wide(1) - Wide(o.dampening)) * ge;
    buffer_out[i] = static_cast<float>(b);
    Wide di = b;
    if (o.nesterov) di = ge + mu * (bug == Bug::nesterov_without_lookahead ? before : b);
    if (decoupled) di = di + wd * Wide(p[i]);
    d[i] = di;
  }
  return d;
}

// The bias's buffer before the step: its own, or with the shared-buffer bug the kernel's
// first k elements.
const std::vector<float>& bias_buffer(const reference::Case& c, Bug bug, std::vector<float>& tmp) {
  if (bug != Bug::buffer_shared || c.fresh_state()) return c.momentum_bias;
  tmp.assign(c.momentum_kernel.begin(), c.momentum_kernel.begin() + c.k);
  return tmp;
}

template <class T>
struct Sums {
  T loss{0};
  std::vector<T> grad_kernel, grad_bias;
};

template <class T>
class LoopStep {
 public:
  LoopStep(const reference::Case& c, const Recipe& recipe) : c_(c), recipe_(recipe) {}

  reference::StepResult run() {
    const int n = c_.n;
    // `rows` normalise the mean; the sums run over the first `used` of them.
    int rows = n;
    if (recipe_.bug == Bug::drop_remainder_rows) rows = (n / c_.num_shards) * c_.num_shards;
    const int used = recipe_.bug == Bug::rows_past_16_dropped ? std::min(rows, 16) : rows;
    const std::vector<T> r = residuals(c_.kernel, c_.bias, used);

    std::vector<std::pair<int, int>> parts;
    if (recipe_.bug == Bug::chunked_mean_32) {
      for (int b = 0; b < used; b += 32) parts.emplace_back(b, std::min(b + 32, used));
    } else {
      const bool split = recipe_.order == Order::sharded || recipe_.bug == Bug::mean_of_shard_means;
      parts = split_rows(used, split ? c_.num_shards : 1);
    }
    Sums<T> total;
    if (recipe_.bug == Bug::mean_of_shard_means || recipe_.bug == Bug::chunked_mean_32) {
      std::vector<Sums<T>> means;
      for (auto [b, e] : parts)
        means.push_back(scaled(partial(r, rows, b, e, e - b), count(e - b)));
      total = combine(means);
      const T shards = T(static_cast<int>(means.size()));
      total.loss /= shards;
      for (T& g : total.grad_kernel) g /= shards;
      for (T& g : total.grad_bias) g /= shards;
    } else {
      std::vector<Sums<T>> sums;
      for (auto [b, e] : parts) sums.push_back(partial(r, rows, b, e, rows));
      total = recipe_.scale_first ? combine(sums) : scaled(combine(sums), count(rows));
    }
    if (recipe_.bug == Bug::grad_times_shards) {
      for (T& g : total.grad_kernel) g *= T(c_.num_shards);
      for (T& g : total.grad_bias) g *= T(c_.num_shards);
    }
    if (recipe_.bug == Bug::clipped_gradients) {
      // torch.nn.utils.clip_grad_norm_(max_norm=1): the norm over every gradient, then
      // max_norm / (norm + 1e-6), applied only when below 1; .grad holds the clipped values.
      T squares(0);
      for (T g : total.grad_kernel) squares += g * g;
      for (T g : total.grad_bias) squares += g * g;
      const T factor = T(1) / (std::sqrt(squares) + T(1e-6));
      if (factor < T(1)) {
        for (T& g : total.grad_kernel) g *= factor;
        for (T& g : total.grad_bias) g *= factor;
      }
    }
    if (recipe_.bug == Bug::decay_in_loss && c_.optimizer.kind != reference::Optimizer::Kind::sgd) {
      // L2 regularisation in the loss: its gradient carries wd * p, and the optimizer
      // decays once more.
      const T wd = T(c_.optimizer.weight_decay);
      for (std::size_t i = 0; i < total.grad_kernel.size(); ++i)
        total.grad_kernel[i] += wd * T(c_.kernel[i]);
      for (std::size_t i = 0; i < total.grad_bias.size(); ++i)
        total.grad_bias[i] += wd * T(c_.bias[i]);
    }
    if (recipe_.bug == Bug::half_precision_grad) {
      for (T& g : total.grad_kernel) g = T(static_cast<float>(static_cast<_Float16>(g)));
      for (T& g : total.grad_bias) g = T(static_cast<float>(static_cast<_Float16>(g)));
    }

    reference::StepResult out;
    std::vector<float> shared;
    const std::vector<float>& bias_before = bias_buffer(c_, recipe_.bug, shared);
    if (recipe_.wide_state) {
      out.kernel = update(c_.kernel,
                          direction<double>(c_, c_.kernel, total.grad_kernel, c_.momentum_kernel,
                                            out.momentum_kernel, recipe_.bug),
                          false);
      out.bias = update(c_.bias,
                        direction<double>(c_, c_.bias, total.grad_bias, bias_before,
                                          out.momentum_bias, recipe_.bug),
                        recipe_.bug == Bug::bias_not_updated);
    } else {
      out.kernel = update(c_.kernel,
                          direction<T>(c_, c_.kernel, total.grad_kernel, c_.momentum_kernel,
                                       out.momentum_kernel, recipe_.bug),
                          false);
      out.bias = update(
          c_.bias,
          direction<T>(c_, c_.bias, total.grad_bias, bias_before, out.momentum_bias, recipe_.bug),
          recipe_.bug == Bug::bias_not_updated);
    }
    out.loss = {static_cast<float>(total.loss)};
    if (recipe_.bug == Bug::post_update_loss) {
      const std::vector<T> after = residuals(out.kernel, out.bias, used);
      out.loss = {
          static_cast<float>(scaled(partial(after, rows, 0, used, rows), count(rows)).loss)};
    }
    out.grad_kernel = to_float(total.grad_kernel);
    out.grad_bias = to_float(total.grad_bias);
    out.step = next_step(c_.step, recipe_.bug);
    return out;
  }

 private:
  T count(int rows) const {
    const int elements = rows * c_.k;
    if (recipe_.bug == Bug::mean_over_batch) return T(rows);
    if (recipe_.bug == Bug::sum_not_mean) return T(1);
    if (recipe_.bug == Bug::unbiased_mean) return T(elements - 1);
    return T(elements);
  }
  T two() const { return recipe_.bug == Bug::missing_factor_two ? T(1) : T(2); }

  // Input columns the step reads: all but those past the last multiple of 8 with the
  // columns bug.
  int columns() const {
    if (recipe_.bug == Bug::columns_past_8_dropped && c_.d > 8) return c_.d / 8 * 8;
    return c_.d;
  }

  std::vector<T> residuals(const std::vector<float>& w, const std::vector<float>& b,
                           int rows) const {
    const int d = c_.d, k = c_.k, cols = columns();
    std::vector<T> r(static_cast<std::size_t>(rows) * k), terms(static_cast<std::size_t>(cols) + 2);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < k; ++j) {
        for (int l = 0; l < cols; ++l)
          terms[l] = matmul_input(T(c_.x[i * d + l])) * matmul_input(T(w[l * k + j]));
        terms[cols] = T(b[j]);
        terms[cols + 1] = -T(c_.y[i * k + j]);
        r[i * k + j] = add(terms, recipe_.order, recipe_.bug);
      }
    }
    return r;
  }

  // A product's input as the recipe's matmul reads it.
  T matmul_input(T v) const {
    if (recipe_.matmul_inputs == reference::formats::float32) return v;
    return T(round_to(static_cast<float>(v), recipe_.matmul_inputs));
  }

  // x_nd as the gradient reads it; the reshape bug reads x.reshape(D, N)[d][n].
  T x_for_grad(int i, int l, int rows) const {
    if (recipe_.bug == Bug::reshape_not_transpose) return T(c_.x[l * rows + i]);
    return T(c_.x[i * c_.d + l]);
  }

  // Unscaled sums over rows [b, e) of `rows`, or scaled term by term by 1/count(`mean_rows`)
  // with scale_first.
  Sums<T> partial(const std::vector<T>& r, int rows, int b, int e, int mean_rows) const {
    const int d = c_.d, k = c_.k;
    const T inv = T(1) / count(mean_rows);
    const T scale = two() * inv;
    Sums<T> s;
    std::vector<T> terms;
    for (int i = b; i < e; ++i) {
      for (int j = 0; j < k; ++j) {
        const T v = r[i * k + j];
        terms.push_back(recipe_.scale_first ? v * v * inv : v * v);
      }
    }
    s.loss = add(terms, recipe_.order, recipe_.bug);
    auto g_term = [&](int i, int j) {
      const T v = r[i * k + j];
      return recipe_.scale_first ? v * scale : two() * v;
    };
    for (int l = 0; l < d; ++l) {
      for (int j = 0; j < k; ++j) {
        terms.clear();
        if (l < columns())
          for (int i = b; i < e; ++i)
            terms.push_back(matmul_input(x_for_grad(i, l, rows)) * matmul_input(g_term(i, j)));
        s.grad_kernel.push_back(add(terms, recipe_.order, recipe_.bug));
      }
    }
    for (int j = 0; j < k; ++j) {
      terms.clear();
      for (int i = b; i < e; ++i) terms.push_back(g_term(i, j));
      s.grad_bias.push_back(add(terms, recipe_.order, recipe_.bug));
    }
    return s;
  }

  // Multiplies unscaled sums by 1/count (loss) and 1/count (gradients, whose terms
  // already carry the 2).
  Sums<T> scaled(Sums<T> s, T elements) const {
    const T inv = T(1) / elements;
    s.loss *= inv;
    for (T& g : s.grad_kernel) g *= inv;
    for (T& g : s.grad_bias) g *= inv;
    return s;
  }

  // Reduces per-shard sums pairwise across shards.
  Sums<T> combine(const std::vector<Sums<T>>& parts) const {
    if (parts.size() == 1) return parts[0];
    Sums<T> out;
    std::vector<T> terms(parts.size());
    auto across = [&](auto get) {
      for (std::size_t p = 0; p < parts.size(); ++p) terms[p] = get(parts[p]);
      return add_pairwise(terms.data(), terms.size());
    };
    out.loss = across([](const Sums<T>& s) { return s.loss; });
    for (std::size_t e = 0; e < parts[0].grad_kernel.size(); ++e)
      out.grad_kernel.push_back(across([e](const Sums<T>& s) { return s.grad_kernel[e]; }));
    for (std::size_t e = 0; e < parts[0].grad_bias.size(); ++e)
      out.grad_bias.push_back(across([e](const Sums<T>& s) { return s.grad_bias[e]; }));
    return out;
  }

  // p' = p - lr d, for the direction d (the gradient for plain SGD).
  template <class D>
  std::vector<float> update(const std::vector<float>& p, const std::vector<D>& g,
                            bool frozen) const {
    const T lr = T(c_.lr);
    std::vector<float> out(p.size());
    for (std::size_t e = 0; e < p.size(); ++e) {
      const T old = T(p[e]);
      T step = lr * g[e];
      if (recipe_.bug == Bug::lr_twice) step = lr * step;
      // Nesterov's first step, buf = g and d = g + mu buf, with mu = 0.9, on a plain-SGD case.
      if (recipe_.bug == Bug::momentum_on_plain_sgd &&
          c_.optimizer.kind == reference::Optimizer::Kind::sgd)
        step = lr * (T(g[e]) + T(0.9f) * T(g[e]));
      T next;
      if (frozen ||
          (recipe_.bug == Bug::skip_tiny_updates && std::abs(step) < T(1e-6) * std::abs(old))) {
        next = old;
      } else if (recipe_.bug == Bug::wrong_sign) {
        next = old + step;
      } else if (recipe_.fma_update) {
        next = std::fma(-lr, g[e], old);
      } else {
        next = old - step;
      }
      out[e] = static_cast<float>(next);
    }
    return out;
  }

  static std::vector<float> to_float(const std::vector<T>& v) {
    return std::vector<float>(v.begin(), v.end());
  }

  const reference::Case& c_;
  const Recipe& recipe_;
};

reference::StepResult eigen_step(const reference::Case& c) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Row = Eigen::Matrix<float, 1, Eigen::Dynamic>;
  const Eigen::Map<const Mat> w(c.kernel.data(), c.d, c.k), x(c.x.data(), c.n, c.d),
      y(c.y.data(), c.n, c.k);
  const Eigen::Map<const Row> b(c.bias.data(), c.k);
  Mat r = x * w - y;
  r.rowwise() += b;
  const float count = static_cast<float>(c.n * c.k);
  const float scale = 2.0f / count;
  const Mat gw = (x.transpose() * r) * scale;
  const Row gb = r.colwise().sum() * scale;
  reference::StepResult out;
  const std::vector<float> gw_values(gw.data(), gw.data() + gw.size()),
      gb_values(gb.data(), gb.data() + gb.size());
  const std::vector<float> dw =
      direction<float>(c, c.kernel, gw_values, c.momentum_kernel, out.momentum_kernel, Bug::none);
  const std::vector<float> db =
      direction<float>(c, c.bias, gb_values, c.momentum_bias, out.momentum_bias, Bug::none);
  const Mat w_new = w - c.lr * Eigen::Map<const Mat>(dw.data(), c.d, c.k);
  const Row b_new = b - c.lr * Eigen::Map<const Row>(db.data(), c.k);

  out.loss = {r.squaredNorm() / count};
  out.kernel.assign(w_new.data(), w_new.data() + w_new.size());
  out.bias.assign(b_new.data(), b_new.data() + b_new.size());
  out.grad_kernel.assign(gw.data(), gw.data() + gw.size());
  out.grad_bias.assign(gb.data(), gb.data() + gb.size());
  out.step = next_step(c.step, Bug::none);
  return out;
}

// A step with clipping (docs/spec/step.md, "Gradient clipping"): the loss and its
// gradients as without it, then the optimizer from the clipped gradients; the reported
// gradients stay the loss's. A clipping bug as the recipe says.
reference::StepResult clipped_step(const reference::Case& c, const Recipe& recipe,
                                   reference::StepResult (*step)(const reference::Case&,
                                                                 const Recipe&)) {
  reference::Case plain = c;
  plain.clip.reset();
  Recipe correct = recipe;
  if (clipping_bug(recipe.bug)) correct.bug = Bug::none;
  reference::StepResult out = step(plain, correct);
  const std::vector<float> grad_kernel = out.grad_kernel, grad_bias = out.grad_bias;
  reference::Case stepped = c;
  if (recipe.bug == Bug::clip_after_decay) {
    // The decay in the gradient before clipping (as L2 in the loss would put it), the
    // optimizer then decaying no more.
    const float wd = c.optimizer.weight_decay;
    for (std::size_t i = 0; i < out.grad_kernel.size(); ++i) out.grad_kernel[i] += wd * c.kernel[i];
    for (std::size_t i = 0; i < out.grad_bias.size(); ++i) out.grad_bias[i] += wd * c.bias[i];
    stepped.optimizer.weight_decay = 0.0f;
  }
  clip_gradients(c, recipe.bug, out.grad_kernel, out.grad_bias);
  optimize(stepped, correct, out);
  if (recipe.bug != Bug::clip_reported_gradients) {
    out.grad_kernel = grad_kernel;
    out.grad_bias = grad_bias;
  }
  return out;
}

}  // namespace

// v rounded to nearest (ties to even) in `f`, with gradual underflow below its smallest
// normal and infinity past its largest finite value.
float round_to(float v, const reference::Format& f) {
  return static_cast<float>(reference::round_to_format(v, f));
}

// The optimizer's outputs from the gradients in `out` (plain SGD and momentum here, Adam
// and Adagrad by their own steps), as `recipe` computes them; no bug.
void optimize(const reference::Case& c, const Recipe& recipe, reference::StepResult& out) {
  if (c.optimizer.kind == reference::Optimizer::Kind::adam) return adam_step(c, recipe, out);
  if (c.optimizer.kind == reference::Optimizer::Kind::adagrad) return adagrad_step(c, recipe, out);
  auto step = [&](const std::vector<float>& p, const std::vector<float>& g,
                  const std::vector<float>& buffer, std::vector<float>& buffer_out) {
    std::vector<float> next(p.size());
    auto apply = [&](const auto& d) {
      for (std::size_t i = 0; i < p.size(); ++i) {
        using D = std::decay_t<decltype(d[i])>;
        next[i] = static_cast<float>(recipe.fma_update ? std::fma(-D(c.lr), d[i], D(p[i]))
                                                       : D(p[i]) - D(c.lr) * d[i]);
      }
    };
    if (recipe.wide_state)
      apply(direction<double>(c, p, g, buffer, buffer_out, Bug::none));
    else
      apply(direction<float>(c, p, g, buffer, buffer_out, Bug::none));
    return next;
  };
  out.kernel = step(c.kernel, out.grad_kernel, c.momentum_kernel, out.momentum_kernel);
  out.bias = step(c.bias, out.grad_bias, c.momentum_bias, out.momentum_bias);
}

reference::StepResult float32_step(const reference::Case& c, const Recipe& recipe) {
  c.validate();
  if (recipe.stages.declared()) return staged_step(c, recipe);
  if (c.clip) return clipped_step(c, recipe, float32_step);
  reference::StepResult out;
  if (recipe.order == Order::eigen && recipe.bug == Bug::none && !recipe.wide) {
    out = eigen_step(c);
  } else if (recipe.wide) {
    out = LoopStep<double>(c, recipe).run();
  } else {
    out = LoopStep<float>(c, recipe).run();
  }
  // Adam's update from the gradients (the loops above leave its parameters as plain SGD's).
  if (c.optimizer.kind == reference::Optimizer::Kind::adam) adam_step(c, recipe, out);
  if (c.optimizer.kind == reference::Optimizer::Kind::adagrad) adagrad_step(c, recipe, out);
  return out;
}

}  // namespace sgdc::conformance::builtin