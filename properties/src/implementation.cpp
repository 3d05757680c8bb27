#include "sgdc/properties/implementation.hpp"
