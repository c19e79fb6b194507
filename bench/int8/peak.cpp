// The ISA's int8 dot-product peak on one core: independent chains of
// AVX-512 VNNI vpdpbusd (64 uint8 x int8 products each), or AVX2
// vpmaddubsw + vpmaddwd + vpaddd (32 products) without VNNI. Prints GOP/s
// (a multiply and an add per product). Built and run by bench/int8/gemm.py.
#include <immintrin.h>

#include <chrono>
#include <cstdio>

int main() {
  constexpr int chains = 12;
  constexpr long iterations = 200000000 / chains;
  auto start = std::chrono::steady_clock::now();
  long products = 0;
#if defined(__AVX512VNNI__)
  __m512i acc[chains];
  for (auto &a : acc)
    a = _mm512_setzero_si512();
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  for (long i = 0; i < iterations; ++i) {
    // Unrolled, so that the chains live in registers (a loop over the
    // array would keep them in memory, one store-to-load per instruction).
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c)
      acc[c] = _mm512_dpbusd_epi32(acc[c], u, s);
    __asm__ volatile("" : "+v"(u));
  }
  products = iterations * chains * 64L;
  __m512i sum = acc[0];
  for (int c = 1; c < chains; ++c)
    sum = _mm512_add_epi32(sum, acc[c]);
  int check = _mm512_reduce_add_epi32(sum);
  const char *isa = "avx512-vnni vpdpbusd";
#else
  __m256i acc[chains];
  for (auto &a : acc)
    a = _mm256_setzero_si256();
  __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < chains; ++c)
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
    __asm__ volatile("" : "+x"(u));
  }
  products = iterations * chains * 32L;
  __m256i sum = acc[0];
  for (int c = 1; c < chains; ++c)
    sum = _mm256_add_epi32(sum, acc[c]);
  int check = _mm256_extract_epi32(sum, 0);
  const char *isa = "avx2 vpmaddubsw+vpmaddwd";
#endif
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %.1f GOP/s (check %d)\n", isa, 2.0 * products / seconds / 1e9, check);
  return 0;
}
