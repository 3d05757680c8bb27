#pragma once
// An implementation tested under a narrower recipe than it declares (`run --recipe FILE`):
// every call is passed through; its declaration carries the narrowed recipe.

#include <memory>

#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance {

class WithRecipe : public properties::Implementation {
 public:
  // Throws std::invalid_argument naming the field when `asked` leaves no case of `inner`.
  WithRecipe(std::unique_ptr<properties::Implementation> inner,
             const properties::DeclaredRecipe& asked)
      : inner_(std::move(inner)), declaration_(inner_->declaration()) {
    declaration_.recipe = properties::narrow(declaration_.recipe, asked);
    properties::validate(declaration_.recipe, declaration_.capabilities);
  }
  const properties::Declaration& declaration() const override { return declaration_; }
  properties::StepOutcome step(const reference::Case& c) override { return inner_->step(c); }
  std::vector<properties::StepOutcome> step_batch(std::span<const reference::Case> cases) override {
    return inner_->step_batch(cases);
  }
  std::size_t preferred_batch() const override { return inner_->preferred_batch(); }
  bool concurrent_steps() const override { return inner_->concurrent_steps(); }

 private:
  std::unique_ptr<properties::Implementation> inner_;
  properties::Declaration declaration_;
};

}  // namespace sgdc::conformance
