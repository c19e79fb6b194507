// One core's fp32 FMA peak: 12 independent chains of vfmadd231ps on zmm
// (AVX-512F) or ymm (AVX2 + FMA), the register tile's instruction. Prints
// GFLOP/s (a multiply and an add per lane), the figure kiln-bench
// --peak-gflops takes:
//
//   g++ -O2 -march=native bench/fp32/peak.cpp -o /tmp/fp32-peak && /tmp/fp32-peak
//   build/bin/kiln-bench model.kiln --threads=1 --top=20 --peak-gflops=<printed>
//
// (-march=x86-64-v3 measures the AVX2 peak on an AVX-512 host.)
#include <immintrin.h>

#include <chrono>
#include <cstdio>

int main() {
  constexpr int chains = 12;
  constexpr long iterations = 400000000 / chains;
  auto start = std::chrono::steady_clock::now();
#if defined(__AVX512F__)
  constexpr int lanes = 16;
  __m512 acc[chains];
  for (int c = 0; c < chains; ++c)
    acc[c] = _mm512_set1_ps(float(c));
  __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    // Unrolled, so that the chains live in registers (a loop over the
    // array would keep them in memory, one store-to-load per FMA).
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], x, y);
    __asm__ volatile("" : "+v"(x));
  }
  __m512 sum = acc[0];
  for (int c = 1; c < chains; ++c)
    sum = _mm512_add_ps(sum, acc[c]);
  float check = _mm512_reduce_add_ps(sum);
  const char *isa = "avx512f vfmadd231ps zmm";
#elif defined(__FMA__)
  constexpr int lanes = 8;
  __m256 acc[chains];
  for (int c = 0; c < chains; ++c)
    acc[c] = _mm256_set1_ps(float(c));
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], x, y);
    __asm__ volatile("" : "+x"(x));
  }
  __m256 sum = acc[0];
  for (int c = 1; c < chains; ++c)
    sum = _mm256_add_ps(sum, acc[c]);
  float check = _mm256_cvtss_f32(sum);
  const char *isa = "avx2 vfmadd231ps ymm";
#else
#error "needs FMA (-march=x86-64-v3 or later)"
#endif
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double flops = 2.0 * lanes * chains * double(iterations);
  std::printf("%s: %.1f GFLOP/s (check %g)\n", isa, flops / seconds / 1e9, check);
  return 0;
}
