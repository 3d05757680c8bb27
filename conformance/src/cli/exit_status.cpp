#include "commands.hpp"

namespace sgdc::cli {
namespace {
int status = 0;
}
int exit_status() { return status; }
void set_exit_status(int s) { status = s; }
}  // namespace sgdc::cli
