// An adopter's own C++ step, tested in process through the installed package.
#include <sgdc/conformance/run_main.hpp>

namespace {

class MyStep final : public sgdc::properties::Implementation {
 public:
  const sgdc::properties::Declaration& declaration() const override { return declaration_; }

  sgdc::properties::StepOutcome step(const sgdc::reference::Case& c) override {
    const int n = c.n, d = c.d, k = c.k;
    std::vector<float> r(static_cast<std::size_t>(n) * k);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) {
        float s = c.bias[j] - c.y[i * k + j];
        for (int l = 0; l < d; ++l) s += c.x[i * d + l] * c.kernel[l * k + j];
        r[i * k + j] = s;
      }
    const float count = static_cast<float>(n * k);
    sgdc::reference::StepResult out;
    float loss = 0.0f;
    for (float v : r) loss += v * v;
    out.loss = {loss / count};
    out.kernel = c.kernel;
    out.bias = c.bias;
    for (int l = 0; l < d; ++l)
      for (int j = 0; j < k; ++j) {
        float g = 0.0f;
        for (int i = 0; i < n; ++i) g += c.x[i * d + l] * r[i * k + j];
        out.kernel[l * k + j] -= c.lr * (2.0f * g / count);
      }
    for (int j = 0; j < k; ++j) {
      float g = 0.0f;
      for (int i = 0; i < n; ++i) g += r[i * k + j];
      out.bias[j] -= c.lr * (2.0f * g / count);
    }
    return {out, {}};
  }

 private:
  sgdc::properties::Declaration declaration_{.name = "my-step", .version = "1.0"};
};

}  // namespace

int main(int argc, char** argv) {
  return sgdc::conformance::run_main(argc, argv, [] { return std::make_unique<MyStep>(); });
}
