#include "clip_gradients.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace sgdc::conformance::builtin {

namespace {
float squares(const std::vector<float>& g, std::size_t begin, std::size_t end, std::size_t stride) {
  float s = 0.0f;
  for (std::size_t i = begin; i < end; i += stride) s += g[i] * g[i];
  return s;
}

// torch's clip_coef_clamped: min(max_norm / (norm + eps), 1), in float32.
float torch_factor(float norm, const reference::Clipping& clip) {
  return std::min(clip.max_norm / (norm + clip.eps), 1.0f);
}

void scale(std::vector<float>& g, float factor) {
  for (float& v : g) v *= factor;
}
}  // namespace

bool clipping_bug(Bug bug) {
  switch (bug) {
    case Bug::clip_not_applied:
    case Bug::clip_local_shard_norm:
    case Bug::clip_per_parameter:
    case Bug::clip_after_decay:
    case Bug::clip_reported_gradients:
    case Bug::clip_eps_swapped:
      return true;
    default:
      return false;
  }
}

void clip_gradients(const reference::Case& c, Bug bug, std::vector<float>& grad_kernel,
                    std::vector<float>& grad_bias) {
  reference::Clipping clip = *c.clip;
  if (bug == Bug::clip_not_applied) return;
  if (bug == Bug::clip_eps_swapped) clip.eps = clip.eps == 0.0f ? 1e-6f : 0.0f;
  if (bug == Bug::clip_per_parameter) {
    // Each tensor clipped to max_norm by its own norm (clip_grad_norm_ called per
    // parameter).
    for (std::vector<float>* g : {&grad_kernel, &grad_bias})
      scale(*g, torch_factor(std::sqrt(squares(*g, 0, g->size(), 1)), clip));
    return;
  }
  if (bug == Bug::clip_local_shard_norm) {
    // Each shard's rows of the torch weight (a chunk of output columns here, as
    // torch.chunk makes them) clipped by the norm of what that shard holds alone.
    const int k = c.k, chunk = (k + c.num_shards - 1) / c.num_shards;
    for (int first = 0; first < k; first += chunk) {
      const int last = std::min(k, first + chunk);
      float s = 0.0f;
      for (int l = 0; l < c.d; ++l)
        for (int j = first; j < last; ++j) s += grad_kernel[l * k + j] * grad_kernel[l * k + j];
      for (int j = first; j < last; ++j) s += grad_bias[j] * grad_bias[j];
      const float factor = torch_factor(std::sqrt(s), clip);
      for (int l = 0; l < c.d; ++l)
        for (int j = first; j < last; ++j) grad_kernel[l * k + j] *= factor;
      for (int j = first; j < last; ++j) grad_bias[j] *= factor;
    }
    return;
  }
  if (clip.eps != 0.0f) {
    // torch: _foreach_norm per tensor, then the norm of the stacked norms.
    const float nk = std::sqrt(squares(grad_kernel, 0, grad_kernel.size(), 1));
    const float nb = std::sqrt(squares(grad_bias, 0, grad_bias.size(), 1));
    const float factor = torch_factor(std::sqrt(nk * nk + nb * nb), clip);
    scale(grad_kernel, factor);
    scale(grad_bias, factor);
    return;
  }
  // optax: the norm of every leaf's squares summed; select(norm < max_norm, g, g / norm * M).
  const float norm = std::sqrt(squares(grad_kernel, 0, grad_kernel.size(), 1) +
                               squares(grad_bias, 0, grad_bias.size(), 1));
  if (norm < clip.max_norm) return;
  for (std::vector<float>* g : {&grad_kernel, &grad_bias})
    for (float& v : *g) v = (v / norm) * clip.max_norm;
}

}  // namespace sgdc::conformance::builtin
