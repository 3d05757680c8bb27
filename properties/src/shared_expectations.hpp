#pragma once
// The lookup behind SharedExpectations, for Context::expect. Internal to
// sgdc::properties.

#include <memory>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/expectation.hpp"

namespace sgdc::properties::detail {

/// Equal in every field, bit for bit.
bool same_case(const reference::Case& a, const reference::Case& b);

/// reference::expect(c, model): from the store of a live SharedExpectations when it holds
/// it (then kept there too), else computed.
std::shared_ptr<const reference::Expectation> expect(const reference::Case& c,
                                                     const reference::ErrorModel& model);

}  // namespace sgdc::properties::detail
