#pragma once
// MPFR's per-thread caches. Internal to sgdc::reference.

#include <mpfr.h>

namespace sgdc::reference::detail {

/// Frees this thread's MPFR caches when the thread ends. MPFR 4 keeps a pool of integers
/// per thread (mpfr_set_q and the power functions draw on it) that a thread's exit does
/// not free: the oracle's worker threads (threads.hpp) would each leave theirs behind.
/// Called where an MPFR number is made; costs one thread-local check after the first.
inline void free_mpfr_caches_at_thread_exit() {
  struct Release {
    ~Release() { mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE); }
  };
  thread_local Release release;
  static_cast<void>(release);
}

}  // namespace sgdc::reference::detail
