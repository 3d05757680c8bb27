#pragma once
/// \file
/// Fixture files: writing them byte for byte reproducibly, and reading them with every
/// rule of `fixtures/schema/fixture-v1.schema.json` checked.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/conformance/regression/fixture.hpp"

namespace sgdc::conformance::regression {

/// The file's text: fixed key order, two-space indentation, arrays of numbers and
/// strings on one line, shortest round-trip numbers, a final newline.
std::string to_json_text(const Fixture& f);

/// Parses and validates a fixture's text; throws FixtureError (malformed) naming `file`,
/// the JSON path of the first offending field, and the reason.
Fixture parse_fixture(std::string_view text, const std::string& file);

/// Reads and parses the file at `path` (see parse_fixture).
Fixture read_fixture(const std::filesystem::path& path);

/// Writes `f` to DIR/NAME.json, creating DIR; returns the path written. Throws
/// std::runtime_error when the file cannot be written.
std::filesystem::path write_fixture(const Fixture& f, const std::filesystem::path& dir);

/// The fixture files named by `paths`: files as given, directories searched
/// recursively for `*.json` (except `*.schema.json`), each directory's files sorted.
std::vector<std::filesystem::path> fixture_files(const std::vector<std::string>& paths);

}  // namespace sgdc::conformance::regression