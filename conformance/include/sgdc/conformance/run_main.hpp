#pragma once
/// \file
/// A complete conformance executable for an in-process C++ implementation, with the
/// options of `sgd-conformance run` (all but --impl and the adapter options):
///
///     #include <sgdc/conformance/run_main.hpp>
///     class MyStep : public sgdc::properties::Implementation { ... };
///     int main(int argc, char** argv) {
///       return sgdc::conformance::run_main(argc, argv, [] { return std::make_unique<MyStep>(); });
///     }

#include <functional>
#include <memory>

#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance {

/// Parses run's options from the command line and runs the suite against `make()`.
/// Returns the exit status (sgdc/conformance/exit_status.hpp).
int run_main(int argc, char** argv,
             std::function<std::unique_ptr<properties::Implementation>()> make);

}  // namespace sgdc::conformance
