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
  properties::ShapeOptions& shapes = run.shapes;
  cmd.add_option_function<std::vector<std::string>>(
         "--shape",
         [&a](const std::vector<std::string>& texts) {
           for (const std::string& t : texts) {
             const auto shape = properties::parse_shape(t);
             if (!shape) throw CLI::ValidationError("--shape", "expected NxDxK, got " + t);
             a.suite.run.shapes.exact.push_back(*shape);
           }
         },
         "Run at this layer shape NxDxK only (repeatable; 10 cases per property unless --cases)")
      ->type_name("NxDxK");
  cmd.add_option("--shape-pool", shapes.pool,
                 "Distinct shapes a run draws from (0: a new shape every case)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--max-rows", shapes.max_rows, "Largest N drawn at a tile boundary")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--max-features", shapes.max_features, "Largest D or K drawn at a tile boundary")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--shape-budget", shapes.budget,
                 "Most multiply-adds (N*D*K) of a drawn shape; the small dimensions shrink to fit")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  cmd.add_option("--json", a.json_path, "Write the JSON report to FILE");
  cmd.add_option("--junit", a.junit_path, "Write a JUnit XML report to FILE");
  cmd.add_option("--save-failures", a.save_failures_dir,
                 "Write each shrunk counterexample as a fixture file to DIR");
  cmd.add_option("--xfails", a.xfails_path,
                 "Known deviations: lines 'skip|xfail PROPERTY[:MESSAGE]  # reason'");
  cmd.add_option("--recipe", a.recipe_path,
                 "Draw only inside this recipe (JSON: optimizers, hyperparameters, "
                 "even_batches), narrowing the declared one");
  cmd.add_option("--expect", a.expect,
                 "Verdict that makes the exit status 0: conformant or not_conformant")
      ->transform(CLI::CheckedTransformer(std::map<std::string, ExpectedVerdict>{
          {"conformant", ExpectedVerdict::conformant},
          {"not_conformant", ExpectedVerdict::not_conformant}}))
      ->default_str("conformant");
}

void apply_run_defaults(const CLI::App& cmd, RunSettings& settings) {
  // At a user's own (large) shapes a run takes fewer cases unless told otherwise.
  properties::RunOptions& run = settings.suite.run;
  if (!run.shapes.exact.empty() && cmd.count("--cases") == 0) run.cases = exact_shape_cases;
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
