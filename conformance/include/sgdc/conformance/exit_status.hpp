#pragma once
/// \file
/// The exit status of a conformance run: the one place that maps verdicts to numbers.
///
/// 0 the verdict is the expected one (conformant, unless `--expect not_conformant`), 1 it
/// is not, 2 nothing could be tested, 77 skipped (the adapter's framework is missing).

#include "sgdc/conformance/suite.hpp"

namespace sgdc::conformance {

/// Exit status for "skipped": an adapter that exits with it before its handshake says it
/// cannot run here (its framework is missing); ctest's SKIP_RETURN_CODE.
inline constexpr int skipped_status = 77;
/// Exit status when nothing could be tested (bad arguments, an adapter that cannot start).
inline constexpr int could_not_test_status = 2;

/// The verdict a run must reach to exit with 0.
enum class ExpectedVerdict { conformant, not_conformant };

/// The exit status of a run that ended with `verdict`. A fault (crash, hang, protocol
/// error) is never the expected rejection of a broken implementation: no property caught
/// it, so `faulted` makes an expected not_conformant exit with 1.
int exit_status(SuiteVerdict verdict, ExpectedVerdict expected, bool faulted = false);

/// The same for a whole report.
int exit_status(const SuiteReport& report, ExpectedVerdict expected);

}  // namespace sgdc::conformance
