#pragma once
// SGDC_VECTOR_CLONES: compile the function marked with it twice on x86-64, for AVX2 and
// for the baseline, and let the loader pick one for the CPU. Internal to sgdc::reference.
//
// For the oracle's O(N D K) loops: the arithmetic is the same IEEE operations either way,
// only wider, provided the file is compiled without FMA contraction
// (-ffp-contract=off, set in reference/CMakeLists.txt for every file that uses this).

// Not under ASan or TSan: the loader runs the resolver that picks the clone before the
// sanitizer's runtime is set up, and the instrumented resolver crashes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define SGDC_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SGDC_VECTOR_CLONES
#endif
