// FIXRES_MULTIVERSION: on x86-64 with GCC, a function so marked is compiled twice (baseline SSE2
// and AVX2) and the best version is chosen when the program loads. Only for loops whose results
// cannot differ between the two: integer arithmetic, or float operations the compiler may not
// contract (the AVX2 target has no FMA). Off under ThreadSanitizer: the load-time resolvers
// would run, instrumented, before the sanitizer's runtime is up (a crash at start-up).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define FIXRES_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define FIXRES_MULTIVERSION
#endif
