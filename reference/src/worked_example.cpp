#include "sgdc/reference/worked_example.hpp"

namespace sgdc::reference {

Case worked_example() {
  Case c;
  c.n = 2;
  c.d = 1;
  c.k = 1;
  c.kernel = {1.0f};
  c.bias = {0.0f};
  c.x = {1.0f, 2.0f};
  c.y = {0.0f, 0.0f};
  c.lr = 0.1f;
  c.num_shards = 1;
  c.step = 0;
  return c;
}

}  // namespace sgdc::reference