#pragma once
/// \file
/// How many threads the oracle splits one large case over, and spreading independent
/// pieces of work (the drawn cases of a run) over them. Light header.

#include <cstddef>
#include <functional>

namespace sgdc::reference {

/// The threads expect() and certified_step() split a case's O(N D K) loops over, when
/// N D K is at least 2^17 (smaller cases run on the calling thread: starting threads
/// would cost more than it saves), and for_each_index() spreads its calls over. The count
/// set by set_oracle_threads() if any; else the environment variable SGDC_THREADS, read
/// once, if it holds a positive integer; else std::thread::hardware_concurrency() (1 where
/// unknown). Every result is the same, bit for bit, whatever the count: each value is
/// computed whole by one thread, in the serial order.
int oracle_threads();

/// Sets oracle_threads() for the whole process; 0 goes back to SGDC_THREADS or the
/// machine's count. Thread-safe; takes effect at the next call of the oracle.
void set_oracle_threads(int threads);

/// Whether a case of shape n x d x k is large enough (N D K at least 2^17) for the
/// oracle to split its loops over oracle_threads() threads (outside for_each_index).
bool splits_case(int n, int d, int k);

/// Calls fn(i) once for every i in [0, count), on up to oracle_threads() threads (the
/// calling thread one of them), each thread taking the next index not yet taken; returns
/// when every call has returned. When calls throw, the exception of the lowest such index
/// is rethrown, after every call has run. fn must be safe to call concurrently for
/// distinct indices; what it writes for index i it should write to a place of its own.
///
/// Inside a call (and inside nested for_each_index), the oracle's loops and any nested
/// for_each_index run on the calling thread alone: the cores are already busy.
void for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn);

/// Whether the calling thread is running a call of for_each_index() that was spread over
/// several threads. The oracle's loops then stay on the calling thread.
bool inside_for_each_index();

}  // namespace sgdc::reference
