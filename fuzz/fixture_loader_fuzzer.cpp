// libFuzzer target: the fixture loader (fixtures/schema/fixture-v1.schema.json). Any
// text must parse into a Fixture or be rejected with FixtureError; a fixture that parses
// must survive writing and reading back with the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.hpp"
#include "sgdc/conformance/regression/fixture_error.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const sgdc::fuzz::FuzzInput in(data, size);
  try {
    const sgdc::conformance::regression::Fixture f =
        sgdc::conformance::regression::parse_fixture(in.rest(), "fuzz.json");
    const std::string text = sgdc::conformance::regression::to_json_text(f);
    const sgdc::conformance::regression::Fixture again =
        sgdc::conformance::regression::parse_fixture(text, "fuzz.json");
    if (sgdc::conformance::regression::to_json_text(again) != text) __builtin_trap();
  } catch (const sgdc::conformance::regression::FixtureError&) {
    // The documented rejection of a malformed fixture.
  }
  return 0;
}
