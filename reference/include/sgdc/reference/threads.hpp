#pragma once
/// \file
/// How many threads the oracle splits one large case over. Light header.

namespace sgdc::reference {

/// The threads expect() and certified_step() split a case's O(N D K) loops over, when
/// N D K is at least 2^17 (smaller cases run on the calling thread: starting threads
/// would cost more than it saves). The count set by set_oracle_threads() if any; else
/// the environment variable SGDC_THREADS, read once, if it holds a positive integer;
/// else std::thread::hardware_concurrency() (1 where unknown). Every result is the same,
/// bit for bit, whatever the count: each value is computed whole by one thread, in the
/// serial order.
int oracle_threads();

/// Sets oracle_threads() for the whole process; 0 goes back to SGDC_THREADS or the
/// machine's count. Thread-safe; takes effect at the next call of the oracle.
void set_oracle_threads(int threads);

}  // namespace sgdc::reference
