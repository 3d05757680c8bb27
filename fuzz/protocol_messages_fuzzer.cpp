// libFuzzer target: the decoders of what an adapter sends (protocol v1). Any input must
// end in a decoded message or in the documented exception; anything else (a crash, a
// sanitizer report, another exception type escaping) is a finding.
//
// Input layout: byte 0 picks the decoder, byte 1 the case shape (n, d, k in 1..4),
// byte 2 the promised capabilities (bits 0-2) and whether the case is a momentum step
// (bit 3: its answer carries the buffer); the rest is the message text (for a binary
// answer: the line, '\n', then the payload).
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fuzz_input.hpp"
#include "protocol/base64.hpp"
#include "sgdc/conformance/protocol/messages.hpp"

namespace {

sgdc::reference::Case case_of_shape(std::uint8_t shape, bool momentum, bool adagrad) {
  sgdc::reference::Case c;
  c.n = 1 + (shape & 3);
  c.d = 1 + ((shape >> 2) & 3);
  c.k = 1 + ((shape >> 4) & 3);
  c.kernel.assign(static_cast<std::size_t>(c.d * c.k), 0.5f);
  c.bias.assign(static_cast<std::size_t>(c.k), 0.0f);
  c.x.assign(static_cast<std::size_t>(c.n * c.d), 1.0f);
  c.y.assign(static_cast<std::size_t>(c.n * c.k), 1.0f);
  c.lr = 0.25f;
  if (momentum) {
    c.optimizer.kind = sgdc::reference::Optimizer::Kind::momentum;
    c.optimizer.momentum = 0.5f;
    c.momentum_kernel = c.kernel;
    c.momentum_bias = c.bias;
  } else if (adagrad) {
    // Adagrad's answer carries the sum of squares as the second moment, and no buffer.
    c.optimizer.kind = sgdc::reference::Optimizer::Kind::adagrad;
    c.optimizer.eps = 1e-10f;
    c.second_moment_kernel = c.kernel;
    c.second_moment_bias = c.bias;
  }
  return c;
}

sgdc::properties::Capabilities capabilities_of(std::uint8_t bits) {
  sgdc::properties::Capabilities p;
  p.grads = (bits & 1) != 0;
  p.step_counter = (bits & 2) != 0;
  p.shard_layout = (bits & 4) != 0;
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sgdc::fuzz::FuzzInput in(data, size);
  const std::uint8_t which = in.byte();
  const std::uint8_t shape = in.byte();
  const std::uint8_t outputs = in.byte();
  const sgdc::reference::Case c = case_of_shape(shape, (outputs & 8) != 0, (outputs & 16) != 0);
  const sgdc::properties::Capabilities promised = capabilities_of(outputs);
  const std::string_view text = in.rest();
  try {
    switch (which % 4) {
      case 0: {
        // A hello that decodes must survive its own re-encoding.
        const sgdc::conformance::protocol::Hello h =
            sgdc::conformance::protocol::decode_hello_reply(text, (which & 4) != 0);
        (void)sgdc::conformance::protocol::decode_hello(
            sgdc::conformance::protocol::encode_hello_reply(h.declaration));
        break;
      }
      case 3: {
        // A binary answer: the payload is what follows the first '\n'.
        using sgdc::conformance::protocol::ArrayEncoding;
        const auto newline = text.find('\n');
        const sgdc::conformance::protocol::Frame answer{
            std::string(text.substr(0, newline)),
            newline == text.npos ? std::string() : std::string(text.substr(newline + 1))};
        (void)sgdc::conformance::protocol::payload_size(answer.line, 1 << 16);
        const sgdc::properties::StepOutcome o = sgdc::conformance::protocol::decode_answer(
            answer, 7, c, promised, ArrayEncoding::binary);
        if (o.result) {
          const sgdc::conformance::protocol::Frame again =
              sgdc::conformance::protocol::encode_result(7, *o.result, ArrayEncoding::binary);
          (void)sgdc::conformance::protocol::decode_answer(again, 7, c, promised,
                                                           ArrayEncoding::binary);
        }
        break;
      }
      case 1: {
        const sgdc::properties::StepOutcome o =
            sgdc::conformance::protocol::decode_answer(text, 7, c, promised);
        if (o.result) {
          // Likewise for a result: encoded again, it decodes again.
          (void)sgdc::conformance::protocol::decode_answer(
              sgdc::conformance::protocol::encode_result(7, *o.result), 7, c, promised);
        }
        break;
      }
      default: {
        const std::vector<float> v = sgdc::conformance::protocol::decode_floats(text);
        if (sgdc::conformance::protocol::decode_floats(
                sgdc::conformance::protocol::encode_floats(v))
                .size() != v.size()) {
          __builtin_trap();
        }
        break;
      }
    }
  } catch (const sgdc::conformance::protocol::ProtocolError&) {
    // The documented rejection of a malformed message.
  } catch (const std::invalid_argument&) {
    // decode_floats' documented rejection of bad base64.
  }
  return 0;
}
