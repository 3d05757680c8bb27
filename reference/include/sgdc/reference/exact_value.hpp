#pragma once
/// \file
/// The exact value of an output element that may be irrational (Adam's and Adagrad's
/// parameters go through a square root), as a fixture writes it down: the rational when
/// it is one, else its decimal rounded to nearest, decided by an enclosure
/// (docs/error-model.md, sections 14 and 16).

#include <optional>
#include <string>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/outputs.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {

/// One element's exact value: `rational` when the value is rational, else the value
/// rounded to nearest at `digits.size()` significant decimal digits,
/// `(negative ? -1 : 1) * digits * 10^exponent` (`digits` an integer's decimal digits).
struct ExactValue {
  std::optional<Rational> rational;
  bool negative = false;
  std::string digits;
  long exponent = 0;
};

/// Adam's or Adagrad's kernel and bias after the step of Adam or Adagrad case `c` (finite
/// inputs; a bias group is the caller's to apply), element by element, each irrational one to
/// `digits` significant digits. Throws std::runtime_error naming the element when no precision of
/// the enclosure decides its digits.
struct AdamParameters {
  std::vector<ExactValue> kernel, bias;
};
AdamParameters exact_adam_parameters(const Case& c, int digits);

/// The outputs the optimizer makes in a case with gradient clipping (Case::clip; finite
/// inputs; a bias group is the caller's to apply): the parameters and the state its
/// optimizer keeps, element by element, in Q(sqrt S) (docs/error-model.md, section 17),
/// each irrational one to `digits` significant digits. Its other outputs (the loss, the
/// gradients) are evaluate_step<Rational>'s. Throws std::runtime_error naming the element
/// when no precision decides its digits.
PerOutput<std::vector<ExactValue>> exact_clipped_outputs(const Case& c, int digits);

}  // namespace sgdc::reference
