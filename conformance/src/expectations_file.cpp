#include "sgdc/conformance/expectations_file.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sgdc::conformance {

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool glob(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string failure_text(const properties::PropertyReport& r) {
  std::string text;
  if (r.counterexample) text += r.counterexample->message;
  if (r.fault) text += (text.empty() ? "" : "\n") + *r.fault;
  return text;
}
}  // namespace

std::vector<ExpectedDeviation> read_expectations_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open the expectations file", path));
  std::vector<ExpectedDeviation> out;
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const auto hash = raw.find('#');
    const std::string body = trim(raw.substr(0, hash));
    if (body.empty()) continue;
    auto fail = [&](const std::string& why) {
      return std::invalid_argument(fmt::format("{}:{}: {}: \"{}\"", path, line_no, why, trim(raw)));
    };
    std::istringstream words(body);
    std::string keyword, pattern, extra;
    words >> keyword >> pattern >> extra;
    ExpectedDeviation d;
    if (keyword == "skip") {
      d.kind = ExpectedDeviation::Kind::skip;
    } else if (keyword == "xfail") {
      d.kind = ExpectedDeviation::Kind::xfail;
    } else {
      throw fail("expected 'skip' or 'xfail' first");
    }
    if (pattern.empty()) throw fail("missing PROPERTY[:MESSAGE] pattern");
    if (!extra.empty()) throw fail("one pattern per line (put the reason after '#')");
    d.reason = hash == std::string::npos ? "" : trim(raw.substr(hash + 1));
    if (d.reason.empty()) throw fail("every line needs a reason after '#'");
    const auto colon = pattern.find(':');
    d.property = pattern.substr(0, colon);
    d.message = colon == std::string::npos ? "*" : "*" + pattern.substr(colon + 1) + "*";
    d.line = line_no;
    out.push_back(std::move(d));
  }
  return out;
}

const ExpectedDeviation* find_skip(const std::vector<ExpectedDeviation>& list,
                                   const std::string& property) {
  for (const auto& d : list)
    if (d.kind == ExpectedDeviation::Kind::skip && glob(d.property, property)) return &d;
  return nullptr;
}

const ExpectedDeviation* find_xfail(const std::vector<ExpectedDeviation>& list,
                                    const std::string& property, const std::string& text) {
  for (const auto& d : list)
    if (d.kind == ExpectedDeviation::Kind::xfail && glob(d.property, property) &&
        glob(d.message, text))
      return &d;
  return nullptr;
}

const ExpectedDeviation* find_xfail(const std::vector<ExpectedDeviation>& list,
                                    const properties::PropertyReport& report) {
  if (report.passed) return nullptr;
  const std::string text = failure_text(report);
  for (const auto& d : list)
    if (d.kind == ExpectedDeviation::Kind::xfail && glob(d.property, report.property) &&
        glob(d.message, text))
      return &d;
  return nullptr;
}

}  // namespace sgdc::conformance