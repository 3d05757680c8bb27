#include "sgdc/properties/shared_expectations.hpp"

#include <boost/container_hash/hash.hpp>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "sgdc/reference/hyperparameters.hpp"
#include "sgdc/reference/oracle.hpp"
#include "shared_expectations.hpp"

namespace sgdc::properties {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Over fields that same_case and ErrorModel's == compare: equal ones hash equal.
std::size_t hash_of(const reference::Case& c, const reference::ErrorModel& m) {
  std::size_t h = 0;
  for (int v : {c.n, c.d, c.k, c.num_shards}) boost::hash_combine(h, v);
  boost::hash_combine(h, c.step);
  boost::hash_combine(h, c.optimizer.kind);
  for (const reference::Hyperparameter& p : reference::hyperparameters)
    boost::hash_combine(h, p.get(c));
  for (const reference::InputArray& in : reference::input_arrays) {
    const std::vector<float>& a = c.*in.member;
    boost::hash_combine(h, a.size());
    boost::hash_range(h, a.begin(), a.end());
  }
  boost::hash_combine(h, m.u);
  boost::hash_combine(h, m.subnormals);
  boost::hash_combine(h, m.format.fraction_bits);
  boost::hash_combine(h, m.format.min_exponent);
  return h;
}

std::size_t bytes_of(const reference::Case& c, const reference::Expectation& e) {
  std::size_t n = sizeof(reference::Case) + sizeof(reference::Expectation);
  for (const reference::InputArray& in : reference::input_arrays)
    n += (c.*in.member).size() * sizeof(float);
  for (const reference::OutputInfo& info : reference::output_table)
    n += e[info.output].size() * sizeof(reference::Expected);
  return n + (e.kernel_from_grad.size() + e.bias_from_grad.size()) * sizeof(double);
}

struct Entry {
  reference::Case c;
  reference::ErrorModel model;
  std::shared_ptr<const reference::Expectation> expectation;
  std::size_t bytes;
};

struct Store {
  explicit Store(std::size_t capacity) : capacity(capacity) {}
  const std::size_t capacity;
  std::mutex mutex;
  std::unordered_multimap<std::size_t, Entry> entries;
  std::deque<std::size_t> order;  // keys, oldest first, one per entry
  std::size_t bytes = 0;
  std::atomic<std::size_t> computed{0}, reused{0};

  std::shared_ptr<const reference::Expectation> find(std::size_t key, const reference::Case& c,
                                                     const reference::ErrorModel& m) {
    auto [first, last] = entries.equal_range(key);
    for (auto it = first; it != last; ++it)
      if (it->second.model == m && detail::same_case(it->second.c, c))
        return it->second.expectation;
    return nullptr;
  }

  void keep(std::size_t key, const reference::Case& c, const reference::ErrorModel& m,
            std::shared_ptr<const reference::Expectation> e) {
    if (find(key, c, m)) return;  // another thread computed it meanwhile: the same result
    const std::size_t size = bytes_of(c, *e);
    entries.emplace(key, Entry{c, m, std::move(e), size});
    order.push_back(key);
    bytes += size;
    while (bytes > capacity && !order.empty()) {
      // An entry under the oldest key (the one of a hash collision that leaves does
      // not matter: the bytes taken off are its own).
      const auto oldest = entries.find(order.front());
      bytes -= oldest->second.bytes;
      entries.erase(oldest);
      order.pop_front();
    }
  }
};

std::atomic<Store*> live{nullptr};  // the live SharedExpectations' store, if any
std::mutex live_mutex;

}  // namespace

namespace detail {

bool same_case(const reference::Case& a, const reference::Case& b) {
  if (a.n != b.n || a.d != b.d || a.k != b.k || a.num_shards != b.num_shards || a.step != b.step)
    return false;
  const reference::Optimizer &o = a.optimizer, &p = b.optimizer;
  if (o.kind != p.kind || o.nesterov != p.nesterov || o.decay != p.decay) return false;
  // Every hyperparameter, lr included, from the one table: an optimizer's new one counts
  // here as it is added there.
  for (const reference::Hyperparameter& h : reference::hyperparameters)
    if (!same_bits(h.get(a), h.get(b))) return false;
  for (const reference::InputArray& in : reference::input_arrays)
    if (!same_bits(a.*in.member, b.*in.member)) return false;
  if (a.bias_group.has_value() != b.bias_group.has_value()) return false;
  if (a.bias_group) {
    for (auto h : {&reference::ParamGroup::lr, &reference::ParamGroup::weight_decay}) {
      const std::optional<float>&x = (*a.bias_group).*h, &y = (*b.bias_group).*h;
      if (x.has_value() != y.has_value() || (x && !same_bits(*x, *y))) return false;
    }
  }
  if (a.clip.has_value() != b.clip.has_value()) return false;
  if (a.clip &&
      (!same_bits(a.clip->max_norm, b.clip->max_norm) || !same_bits(a.clip->eps, b.clip->eps)))
    return false;
  return true;
}

std::shared_ptr<const reference::Expectation> expect(const reference::Case& c,
                                                     const reference::ErrorModel& model) {
  Store* store = live;
  if (store == nullptr)
    return std::make_shared<const reference::Expectation>(reference::expect(c, model));
  const std::size_t key = hash_of(c, model);
  {
    std::lock_guard lock(store->mutex);
    if (auto e = store->find(key, c, model)) {
      ++store->reused;
      return e;
    }
  }
  // Computed outside the lock, so that the runner's threads evaluate side by side.
  auto e = std::make_shared<const reference::Expectation>(reference::expect(c, model));
  ++store->computed;
  std::lock_guard lock(store->mutex);
  store->keep(key, c, model, e);
  return e;
}

}  // namespace detail

SharedExpectations::SharedExpectations(std::size_t capacity_bytes) {
  std::lock_guard lock(live_mutex);
  if (live.load() != nullptr) throw std::logic_error("SharedExpectations: one is live already");
  live.store(new Store(capacity_bytes));
}

SharedExpectations::~SharedExpectations() {
  std::lock_guard lock(live_mutex);
  delete live.exchange(nullptr);
}

std::size_t SharedExpectations::computed() const { return live.load()->computed; }
std::size_t SharedExpectations::reused() const { return live.load()->reused; }

}  // namespace sgdc::properties
