#include "run_options.hpp"

namespace sgdc::conformance::cli {

void add_run_options(CLI::App& cmd, RunSettings& a) {
  properties::RunOptions& run = a.suite.run;
  cmd.add_option("--cases", run.cases, "Passing cases per property")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--seed", run.seed, "Seed of the case generators")->capture_default_str();
  cmd.add_option("--property", a.suite.only, "Run only this property (repeatable)");
  cmd.add_option_function<int>(
         "--case", [&run](int index) { run.only_case = index; }, "Replay only this case index")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option_function<int>(
         "--shards", [&run](int s) { run.num_shards = s; },
         "Give every generated case this num_shards")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--json", a.json_path, "Write the JSON report to FILE");
  cmd.add_option("--junit", a.junit_path, "Write a JUnit XML report to FILE");
  cmd.add_option("--save-failures", a.save_failures_dir,
                 "Write each shrunk counterexample as a fixture file to DIR");
  cmd.add_option("--xfails", a.xfails_path,
                 "Known deviations: lines 'skip|xfail PROPERTY[:MESSAGE]  # reason'");
  cmd.add_option("--expect", a.expect,
                 "Verdict that makes the exit status 0: conformant or not_conformant")
      ->transform(CLI::CheckedTransformer(std::map<std::string, ExpectedVerdict>{
          {"conformant", ExpectedVerdict::conformant},
          {"not_conformant", ExpectedVerdict::not_conformant}}))
      ->default_str("conformant");
}

void add_adapter_options(CLI::App& cmd, protocol::AdapterOptions& options) {
  cmd.add_option("--timeout", options.case_timeout_s, "Seconds an adapter may take per case")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--handshake-timeout", options.handshake_timeout_s,
                 "Seconds an adapter may take to start and answer hello")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--arrays",
         [&options](const std::string& name) {
           options.offer =
               name == "base64" ? protocol::ArrayEncoding::base64 : protocol::ArrayEncoding::binary;
         },
         "Array encoding offered to adapters: binary (raw bytes after each line, used "
         "when the adapter accepts it) or base64 (the protocol's base encoding)")
      ->check(CLI::IsMember({"binary", "base64"}))
      ->default_str(std::string(protocol::to_string(options.offer)));
  cmd.add_option("--ahead", options.window,
                 "Cases sent to an adapter ahead of their answers, when it declares "
                 "max_in_flight (1: one at a time)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

}  // namespace sgdc::conformance::cli
