// The examples of docs/spec/step.md and docs/spec/protocol.md against the code: each
// fenced block whose info string names `spec-example:TAG` is checked here, and every tag
// in the documents must be one this test knows.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/properties/sharding/placement.hpp"
#include "sgdc/reference/counter.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/worked_example.hpp"
#include "support/float_bits.hpp"

namespace sgdc::conformance::protocol {
namespace {

using ojson = nlohmann::ordered_json;
namespace sharding = properties::sharding;
using test_support::float_bits;

const std::string spec_dir = SGDC_SPEC_DIR;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A tagged example: its lines, and where it starts, for messages.
struct Block {
  std::vector<std::string> lines;
  int line = 0;
};

// The blocks of `path` opened by a fence whose info string holds "spec-example:TAG".
std::map<std::string, Block> tagged_blocks(const std::string& path) {
  const std::vector<std::string> lines = read_lines(path);
  std::map<std::string, Block> out;
  const std::string marker = "spec-example:";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].starts_with("```")) continue;
    const auto at = lines[i].find(marker);
    std::size_t end = i + 1;
    while (end < lines.size() && !lines[end].starts_with("```")) ++end;
    if (at != std::string::npos) {
      const std::string rest = lines[i].substr(at + marker.size());
      const std::string tag = rest.substr(0, rest.find_first_of(" \t"));
      if (out.contains(tag)) throw std::runtime_error(path + ": tag " + tag + " appears twice");
      Block b{{lines.begin() + static_cast<std::ptrdiff_t>(i) + 1,
               lines.begin() + static_cast<std::ptrdiff_t>(end)},
              static_cast<int>(i) + 1};
      // Blank lines inside a block separate nothing.
      std::erase_if(b.lines, [](const std::string& l) {
        return l.find_first_not_of(" \t") == std::string::npos;
      });
      out.emplace(tag, std::move(b));
    }
    i = end;
  }
  return out;
}

const std::map<std::string, Block>& protocol_blocks() {
  static const auto blocks = tagged_blocks(spec_dir + "/protocol.md");
  return blocks;
}
const std::map<std::string, Block>& step_blocks() {
  static const auto blocks = tagged_blocks(spec_dir + "/step.md");
  return blocks;
}

// The block `tag`; fails the test when it is missing.
const Block& block(const std::map<std::string, Block>& blocks, const std::string& tag) {
  const auto it = blocks.find(tag);
  if (it == blocks.end()) throw std::runtime_error("no block tagged spec-example:" + tag);
  return it->second;
}

// The block's only line: one message.
const std::string& one_line(const Block& b) {
  if (b.lines.size() != 1)
    throw std::runtime_error("the block at line " + std::to_string(b.line) + " has " +
                             std::to_string(b.lines.size()) + " lines, expected one message");
  return b.lines[0];
}

// Field order matters: ordered_json compares objects member by member, in order.
ojson parsed(std::string_view line) { return ojson::parse(line); }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The payload bytes written as hex pairs, e.g. "cd cc cc 3d  00 00 80 3f".
std::string bytes_from_hex(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines)
    for (const std::string& w : words(line)) {
      if (w.size() != 2) throw std::runtime_error("not a hex byte: " + w);
      out.push_back(static_cast<char>(std::stoi(w, nullptr, 16)));
    }
  return out;
}

properties::Capabilities grads_and_counter() {
  properties::Capabilities c;
  c.grads = c.step_counter = true;
  return c;
}

// Every output of `r` is the oracle's correctly rounded value, bit for bit.
void expect_oracle_outputs(const reference::StepResult& r, const reference::Case& c) {
  const reference::Expectation e = reference::expect(c);
  for (const reference::OutputInfo& out : reference::output_table) {
    ASSERT_EQ(r[out.output].size(), e[out.output].size()) << out.name;
    for (std::size_t i = 0; i < r[out.output].size(); ++i)
      EXPECT_EQ(float_bits(r[out.output][i]), float_bits(e[out.output][i].rounded))
          << out.name << "[" << i << "]";
  }
}

TEST(SpecExamples, EveryTagIsChecked) {
  const std::set<std::string> protocol_tags = {"hello",
                                               "hello-binary",
                                               "hello-reply-minimal",
                                               "hello-reply",
                                               "step",
                                               "result",
                                               "error",
                                               "shards-flat",
                                               "shards-output_chunks",
                                               "shards-input_chunks",
                                               "shards-output_chunks-momentum",
                                               "step-momentum",
                                               "step-adam",
                                               "step-clipped",
                                               "bye",
                                               "step-binary",
                                               "result-binary",
                                               "step-batch",
                                               "recipe"};
  const std::set<std::string> step_tags = {"worked-example", "counter"};
  std::set<std::string> found;
  for (const auto& [tag, b] : protocol_blocks()) found.insert(tag);
  EXPECT_EQ(found, protocol_tags) << "docs/spec/protocol.md";
  found.clear();
  for (const auto& [tag, b] : step_blocks()) found.insert(tag);
  EXPECT_EQ(found, step_tags) << "docs/spec/step.md";
}

// --- the suite's messages -------------------------------------------------------------

TEST(SpecExamples, SuiteHello) {
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "hello"))), parsed(encode_hello()));
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "hello-binary"))), parsed(encode_hello(true)));
}

TEST(SpecExamples, WorkedExampleStep) {
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "step"))),
            parsed(encode_step(7, reference::worked_example())));
}

TEST(SpecExamples, MomentumStep) {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.5f;
  c.optimizer.nesterov = true;
  c.optimizer.weight_decay = 0.25f;
  c.momentum_kernel = {1.0f};
  c.momentum_bias = {2.0f};
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "step-momentum"))), parsed(encode_step(8, c)));
}

TEST(SpecExamples, AdamStep) {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::adam;
  c.optimizer.b1 = 0.9f;
  c.optimizer.b2 = 0.999f;
  c.optimizer.eps = 1e-8f;
  c.optimizer.weight_decay = 0.01f;
  c.optimizer.decay = reference::Optimizer::Decay::decoupled;
  c.validate();
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "step-adam"))), parsed(encode_step(9, c)));
}

TEST(SpecExamples, ClippedStep) {
  reference::Case c = reference::worked_example();
  c.clip = reference::Clipping{1.0f, 1e-6f};
  c.validate();
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "step-clipped"))), parsed(encode_step(10, c)));
}

TEST(SpecExamples, MomentumShardLayout) {
  const ojson list = parsed(one_line(block(protocol_blocks(), "shards-output_chunks-momentum")));
  std::vector<reference::ShardPart> reported;
  for (const ojson& s : list)
    reported.push_back({s.at("kernel").get<std::int64_t>(), s.at("bias").get<std::int64_t>(),
                        s.at("state_kernel").get<std::int64_t>(),
                        s.at("state_bias").get<std::int64_t>()});
  EXPECT_EQ(
      sharding::layout_violation(reported, 2, 3, 4, sharding::PlacementRule::output_chunks, 1),
      std::nullopt);
}

TEST(SpecExamples, BinaryStep) {
  const Block& b = block(protocol_blocks(), "step-binary");
  ASSERT_GE(b.lines.size(), 2u);
  const Frame frame = encode_step(7, reference::worked_example(), ArrayEncoding::binary);
  EXPECT_EQ(parsed(b.lines[0]), parsed(frame.line));
  EXPECT_EQ(bytes_from_hex({b.lines.begin() + 1, b.lines.end()}), frame.payload);
}

TEST(SpecExamples, BatchedSteps) {
  const Block& b = block(protocol_blocks(), "step-batch");
  ASSERT_EQ(b.lines.size(), 2u);
  reference::Case second = reference::worked_example();
  second.step = 1;
  EXPECT_EQ(parsed(b.lines[0]), parsed(encode_step(7, reference::worked_example(),
                                                   ArrayEncoding::base64, BatchPosition{0, 2})
                                           .line));
  EXPECT_EQ(parsed(b.lines[1]),
            parsed(encode_step(8, second, ArrayEncoding::base64, BatchPosition{1, 2}).line));
}

TEST(SpecExamples, Bye) {
  EXPECT_EQ(parsed(one_line(block(protocol_blocks(), "bye"))), parsed(encode_bye()));
}

// --- the adapter's messages -----------------------------------------------------------

TEST(SpecExamples, MinimalHelloReplyHasEveryDefault) {
  const Hello h =
      decode_hello_reply(one_line(block(protocol_blocks(), "hello-reply-minimal")), false);
  const properties::Declaration& d = h.declaration;
  EXPECT_EQ(d.name, "flax-nnx");
  EXPECT_EQ(d.version, "0.12.8");
  EXPECT_TRUE(d.capabilities.grads);
  EXPECT_TRUE(d.capabilities.step_counter);
  EXPECT_FALSE(d.capabilities.shard_layout);
  EXPECT_EQ(d.arithmetic.subnormals, reference::Subnormals::ieee);
  EXPECT_EQ(d.arithmetic.u, 0x1p-24);
  EXPECT_FALSE(d.capabilities.sharded);
  EXPECT_EQ(d.capabilities.max_shards, 0) << "no limit";
  EXPECT_EQ(h.arrays, ArrayEncoding::base64);
  EXPECT_EQ(h.max_in_flight, 1);
  EXPECT_EQ(h.max_batch, 1);
  EXPECT_EQ(d.capabilities.placement, sharding::PlacementRule::flat);
  EXPECT_EQ(d.counter.type, reference::CounterType::int64);
  EXPECT_EQ(d.counter.at_end, reference::CounterEnd::untested);
}

TEST(SpecExamples, Recipe) {
  const properties::DeclaredRecipe r =
      decode_recipe(nlohmann::json::parse(one_line(block(protocol_blocks(), "recipe"))));
  EXPECT_EQ(r.optimizers, std::vector{reference::Optimizer::Kind::adam});
  EXPECT_EQ(r.range("lr"), (properties::ValueRange{0.0003f, 0.0003f}));
  EXPECT_EQ(r.range("b2"), (properties::ValueRange{0.95f, 0.95f}));
  EXPECT_EQ(r.range("weight_decay"), (properties::ValueRange{0.0f, 0.1f}));
  EXPECT_TRUE(r.even_batches);
  ASSERT_TRUE(r.bias_group);
  EXPECT_EQ(r.bias_group->weight_decay, (properties::ValueRange{0.0f, 0.0f}));
  EXPECT_FALSE(r.bias_group->lr);
  // Valid for an AdamW implementation.
  properties::Capabilities caps;
  caps.adam = properties::AdamSupport{.decoupled_decay = true};
  EXPECT_NO_THROW(properties::validate(r, caps));
  EXPECT_EQ(encode_recipe(r).dump(), one_line(block(protocol_blocks(), "recipe")));
}

TEST(SpecExamples, FullHelloReply) {
  const std::string& line = one_line(block(protocol_blocks(), "hello-reply"));
  const Hello h = decode_hello_reply(line, true);
  const properties::Declaration& d = h.declaration;
  EXPECT_EQ(d.name, "my-step");
  EXPECT_EQ(d.version, "1.0");
  EXPECT_TRUE(d.capabilities.grads && d.capabilities.step_counter && d.capabilities.shard_layout);
  EXPECT_EQ(d.arithmetic.subnormals, reference::Subnormals::flush_to_zero);
  EXPECT_EQ(d.arithmetic.u, 0x1p-11);
  EXPECT_EQ(d.arithmetic.format, reference::formats::tf32);
  EXPECT_TRUE(d.capabilities.sharded);
  EXPECT_EQ(d.capabilities.max_shards, 8);
  EXPECT_EQ(h.arrays, ArrayEncoding::binary);
  EXPECT_EQ(h.max_in_flight, 64);
  EXPECT_EQ(h.max_batch, 4);
  EXPECT_EQ(d.capabilities.placement, sharding::PlacementRule::output_chunks);
  EXPECT_EQ(d.counter.type, reference::CounterType::uint32);
  EXPECT_EQ(d.counter.at_end, reference::CounterEnd::wrap);
  ASSERT_TRUE(d.capabilities.momentum.has_value());
  EXPECT_TRUE(d.capabilities.momentum->dampening && d.capabilities.momentum->nesterov &&
              d.capabilities.momentum->coupled_decay && d.capabilities.momentum->decoupled_decay);

  // Every field the example shares with encode_hello_reply has the value it writes.
  const ojson example = parsed(line);
  const ojson encoded = parsed(encode_hello_reply(d));
  for (const auto& [key, value] : encoded.items()) {
    ASSERT_TRUE(example.contains(key)) << key;
    EXPECT_EQ(example[key], value) << key;
  }
  // Binary arrays only when offered.
  EXPECT_THROW(decode_hello_reply(line, false), ProtocolError);
}

TEST(SpecExamples, WorkedExampleResult) {
  const std::string& line = one_line(block(protocol_blocks(), "result"));
  const reference::Case c = reference::worked_example();
  const properties::StepOutcome out = decode_answer(line, 7, c, grads_and_counter());
  ASSERT_TRUE(out.result.has_value()) << out.rejection;
  expect_oracle_outputs(*out.result, c);
  EXPECT_EQ(out.result->step, reference::next_count(reference::Counter{}, c.step));
  EXPECT_EQ(parsed(line), parsed(encode_result(7, *out.result)));
}

TEST(SpecExamples, BinaryResult) {
  const Block& b = block(protocol_blocks(), "result-binary");
  ASSERT_GE(b.lines.size(), 2u);
  const Frame frame{b.lines[0], bytes_from_hex({b.lines.begin() + 1, b.lines.end()})};
  const reference::Case c = reference::worked_example();
  const properties::StepOutcome out =
      decode_answer(frame, 7, c, grads_and_counter(), ArrayEncoding::binary);
  ASSERT_TRUE(out.result.has_value()) << out.rejection;
  expect_oracle_outputs(*out.result, c);
  EXPECT_EQ(out.result->step, 1);
  const Frame again = encode_result(7, *out.result, ArrayEncoding::binary);
  EXPECT_EQ(parsed(frame.line), parsed(again.line));
  EXPECT_EQ(frame.payload, again.payload);
}

TEST(SpecExamples, ErrorIsARejection) {
  const std::string& line = one_line(block(protocol_blocks(), "error"));
  const properties::StepOutcome out =
      decode_answer(line, 7, reference::worked_example(), grads_and_counter());
  EXPECT_FALSE(out.result.has_value());
  const std::string message = parsed(line)["message"].get<std::string>();
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(out.rejection, message);
  EXPECT_EQ(parsed(line), parsed(encode_error(7, message)));
}

TEST(SpecExamples, ShardLayouts) {
  for (const char* rule_name : {"flat", "output_chunks", "input_chunks"}) {
    SCOPED_TRACE(rule_name);
    const auto rule = sharding::parse_placement_rule(rule_name);
    ASSERT_TRUE(rule.has_value());
    const ojson list =
        parsed(one_line(block(protocol_blocks(), std::string("shards-") + rule_name)));
    ASSERT_TRUE(list.is_array());
    std::vector<reference::ShardPart> reported;
    for (const ojson& s : list)
      reported.push_back({s.at("kernel").get<std::int64_t>(), s.at("bias").get<std::int64_t>()});
    // D = 2, K = 3, S = 4, as the text says.
    const auto expected = sharding::expected_layout(2, 3, 4, *rule);
    ASSERT_EQ(reported.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(reported[i].kernel, expected[i].kernel) << "shard " << i;
      EXPECT_EQ(reported[i].bias, expected[i].bias) << "shard " << i;
    }
    EXPECT_EQ(sharding::layout_violation(reported, 2, 3, 4, *rule), std::nullopt);
  }
}

// --- docs/spec/step.md ----------------------------------------------------------------

TEST(SpecExamples, WorkedExampleNumbers) {
  // `name = value ...` lines.
  std::map<std::string, std::vector<std::string>> v;
  for (const std::string& line : block(step_blocks(), "worked-example").lines) {
    const auto eq = line.find(" = ");
    ASSERT_NE(eq, std::string::npos) << line;
    v[line.substr(0, eq)] = words(line.substr(eq + 3));
  }
  std::set<std::string> unchecked;
  for (const auto& [name, values] : v) unchecked.insert(name);
  const auto take = [&](const std::string& name) {
    unchecked.erase(name);
    if (!v.contains(name)) throw std::runtime_error("worked example has no " + name);
    return v.at(name);
  };
  const auto floats = [&](const std::string& name) {
    std::vector<float> out;
    for (const std::string& w : take(name)) out.push_back(static_cast<float>(std::stod(w)));
    return out;
  };
  const auto integer = [&](const std::string& name) { return std::stoll(take(name).at(0)); };
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (float_bits(a[i]) != float_bits(b[i])) return false;
    return true;
  };

  const reference::Case c = reference::worked_example();
  EXPECT_EQ(integer("N"), c.n);
  EXPECT_EQ(integer("D"), c.d);
  EXPECT_EQ(integer("K"), c.k);
  EXPECT_TRUE(same_bits(floats("W"), c.kernel));
  EXPECT_TRUE(same_bits(floats("b"), c.bias));
  EXPECT_TRUE(same_bits(floats("x"), c.x));
  EXPECT_TRUE(same_bits(floats("y"), c.y));
  EXPECT_TRUE(same_bits(floats("lr"), {c.lr}));
  EXPECT_EQ(integer("step"), c.step);
  EXPECT_EQ(c.num_shards, 1);

  const reference::Expectation e = reference::expect(c);
  for (const reference::OutputInfo& out : reference::output_table) {
    if (!reports(out, c, true)) continue;  // the momentum buffer: not part of plain SGD
    std::vector<float> want;
    for (const reference::Expected& x : e[out.output]) want.push_back(x.rounded);
    EXPECT_TRUE(same_bits(floats(out.name), want)) << out.name;
  }
  EXPECT_EQ(integer("step'"), reference::next_count(reference::Counter{}, c.step));

  // The loss after the update, which the step does not return.
  reference::Case after = c;
  after.kernel = {e.kernel[0].rounded};
  after.bias = {e.bias[0].rounded};
  const float post = reference::expect(after).loss[0].rounded;
  EXPECT_TRUE(same_bits(floats("post-update loss"), {post}));
  EXPECT_NE(float_bits(post), float_bits(e.loss[0].rounded));

  EXPECT_TRUE(unchecked.empty()) << "unchecked line: " << *unchecked.begin();
}

TEST(SpecExamples, CounterEnds) {
  const Block& b = block(step_blocks(), "counter");
  ASSERT_FALSE(b.lines.empty());
  for (const std::string& line : b.lines) {
    SCOPED_TRACE(line);
    // DTYPE END STEP -> NEXT
    const std::vector<std::string> w = words(line);
    ASSERT_EQ(w.size(), 5u);
    ASSERT_EQ(w[3], "->");
    const auto type = reference::parse_counter_type(w[0]);
    const auto end = reference::parse_counter_end(w[1]);
    ASSERT_TRUE(type && end);
    const reference::Counter counter{*type, *end};
    const std::int64_t step = std::stoll(w[2]);
    EXPECT_LE(step, reference::largest_count(*type));
    EXPECT_LE(step, reference::largest_drawn_count(counter));
    EXPECT_EQ(reference::next_count(counter, step), std::stoll(w[4]));
  }
}

// The table of counter types: each row's largest value, and the ends a hello reply may
// declare for it.
TEST(SpecExamples, CounterTable) {
  std::set<std::string> seen;
  for (const std::string& line : read_lines(spec_dir + "/step.md")) {
    if (!line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream in(line.substr(1));
    for (std::string cell; std::getline(in, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    const std::string name = words(cells[0]).at(0);
    const auto type = reference::parse_counter_type(name.substr(1, name.size() - 2));
    if (!type) continue;
    SCOPED_TRACE(line);
    seen.insert(reference::to_string(*type));
    EXPECT_EQ(std::stoll(words(cells[1]).at(0)), reference::largest_count(*type));
    for (const char* at_end : {"wrap", "saturate"}) {
      const bool listed = cells[2].find(at_end) != std::string::npos;
      const std::string reply =
          std::string(R"({"op":"hello","protocol":1,"name":"n","version":"v","capabilities":[],)") +
          R"("counter":{"dtype":")" + reference::to_string(*type) + R"(","at_end":")" + at_end +
          R"("}})";
      if (listed) {
        EXPECT_NO_THROW(decode_hello_reply(reply, false)) << at_end;
      } else {
        EXPECT_THROW(decode_hello_reply(reply, false), ProtocolError) << at_end;
      }
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"int32", "uint32", "int64", "float32", "float64"}));
}

}  // namespace
}  // namespace sgdc::conformance::protocol
