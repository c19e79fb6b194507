// The FMA rate of GEMM register tiles in L1, one core: each k step of an
// MR x (16 NV) tile loads NV vectors of B and broadcasts MR elements of A
// from memory, then does MR x NV vfmadd231ps, as Kiln's micro-kernels do
// (kiln-cpu-vectorize-gemm). Printed as GFLOP/s and as a fraction of the
// register-only peak of bench/fp32/peak.cpp when given it:
//   g++ -O3 -march=native bench/fp32/tiles.cpp -o /tmp/fp32-tiles && /tmp/fp32-tiles [PEAK]
// The operands stay in L1 (64 KB would not), so the figures are the tile's
// ceiling: load ports against FMA ports, not the memory system.
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#if !defined(__AVX512F__)
int main() {
  std::printf("needs AVX-512 (compile with -march=native on an AVX-512 host)\n");
  return 0;
}
#else
alignas(64) static float a[16 * 64];
alignas(64) static float b[64 * 64];

template <int MR, int NV>
static void run(const char *name, double peak) {
  const long iterations = 100000000L / (MR * NV);
  __m512 acc[MR][NV];
  for (auto &row : acc)
    for (auto &v : row)
      v = _mm512_setzero_ps();
  const float *pa = a, *pb = b;
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    int k = int(i & 63);
    __m512 col[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      col[v] = _mm512_loadu_ps(pb + (k & 15) * 64 + v * 16);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      __m512 x = _mm512_set1_ps(pa[r * 64 + k]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_fmadd_ps(x, col[v], acc[r][v]);
    }
    // (Opaque pointers: the loads stay in the loop.)
    __asm__ volatile("" : "+r"(pa), "+r"(pb));
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  __m512 sum = _mm512_setzero_ps();
  for (auto &row : acc)
    for (auto &v : row)
      sum = _mm512_add_ps(sum, v);
  double gflops = 2.0 * iterations * MR * NV * 16 / seconds / 1e9;
  std::printf("%-6s %6.1f GFLOP/s", name, gflops);
  if (peak > 0)
    std::printf("  %3.0f%% of %.0f", 100 * gflops / peak, peak);
  std::printf("  (check %g)\n", double(_mm512_reduce_add_ps(sum)));
}

int main(int argc, char **argv) {
  double peak = argc > 1 ? std::atof(argv[1]) : 0;
  run<16, 1>("16x16", peak);
  run<8, 2>("8x32", peak);
  run<12, 2>("12x32", peak);
  run<14, 2>("14x32", peak);
  run<6, 4>("6x64", peak);
  run<4, 4>("4x64", peak);
  return 0;
}
#endif
