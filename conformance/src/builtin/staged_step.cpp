#include "staged_step.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "clip_gradients.hpp"
#include "sgdc/conformance/builtin/float32_step.hpp"
#include "sgdc/reference/counter.hpp"

namespace sgdc::conformance::builtin {

namespace {
std::vector<float> rounded(const std::vector<float>& v, const reference::Format& f) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_to(v[i], f);
  return out;
}
}  // namespace

reference::StepResult staged_step(const reference::Case& c, const Recipe& recipe) {
  const reference::Stages& st = recipe.stages;
  const int n = c.n, d = c.d, k = c.k;
  const std::vector<float> x = rounded(c.x, st.param), w = rounded(c.kernel, st.param),
                           b = rounded(c.bias, st.param);
  const float count = static_cast<float>(n) * static_cast<float>(k);
  const float scale = 2.0f / count;
  std::vector<float> gout(static_cast<std::size_t>(n) * k);
  float squares = 0.0f;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      float z = b[j];
      for (int l = 0; l < d; ++l)
        z += x[static_cast<std::size_t>(i) * d + l] * w[static_cast<std::size_t>(l) * k + j];
      const std::size_t e = static_cast<std::size_t>(i) * k + j;
      const float r = round_to(z, st.param) - c.y[e];
      squares += r * r;
      gout[e] = round_to(r * scale, st.param);
    }
  }
  reference::StepResult out;
  out.loss = {squares / count};
  // Each rank's rows as torch.tensor_split gives them; its gradients rounded to the
  // compute copy, then summed over the ranks in the reduction's format.
  const int shards = std::max(1, c.num_shards);
  out.grad_kernel.assign(static_cast<std::size_t>(d) * k, 0.0f);
  out.grad_bias.assign(static_cast<std::size_t>(k), 0.0f);
  for (int s = 0; s < shards; ++s) {
    const auto [first, last] = reference::split_part(n, shards, s);
    const int begin = static_cast<int>(first), end = static_cast<int>(last);
    auto reduce = [&](float& total, float part) {
      const float mine = round_to(round_to(part, st.param), st.reduce);
      total = s == 0 ? mine : round_to(total + mine, st.reduce);
    };
    for (int j = 0; j < k; ++j) {
      float part = 0.0f;
      for (int i = begin; i < end; ++i) part += gout[static_cast<std::size_t>(i) * k + j];
      reduce(out.grad_bias[j], part);
      for (int l = 0; l < d; ++l) {
        float pk = 0.0f;
        for (int i = begin; i < end; ++i)
          pk += x[static_cast<std::size_t>(i) * d + l] * gout[static_cast<std::size_t>(i) * k + j];
        reduce(out.grad_kernel[static_cast<std::size_t>(l) * k + j], pk);
      }
    }
  }
  out.step = reference::next_count(builtin_counter, c.step);

  // The optimizer on the master weights as stored: read in their format, written in it.
  reference::Case stored = c;
  stored.clip.reset();
  for (std::vector<float>* v :
       {&stored.kernel, &stored.bias, &stored.momentum_kernel, &stored.momentum_bias,
        &stored.second_moment_kernel, &stored.second_moment_bias})
    *v = rounded(*v, st.master);
  const std::vector<float> grad_kernel = out.grad_kernel, grad_bias = out.grad_bias;
  if (c.clip) clip_gradients(c, Bug::none, out.grad_kernel, out.grad_bias);
  Recipe plain = recipe;
  plain.stages = {};
  optimize(stored, plain, out);
  out.grad_kernel = grad_kernel;
  out.grad_bias = grad_bias;
  for (std::vector<float>* v : {&out.kernel, &out.bias, &out.momentum_kernel, &out.momentum_bias,
                                &out.second_moment_kernel, &out.second_moment_bias})
    *v = rounded(*v, st.master);
  return out;
}

}  // namespace sgdc::conformance::builtin
