// Memory bandwidth of this machine, the bound of every kernel that streams
// its weights once (a decode step, a classifier's last layer, INT4 decode):
// read (a sum over the array: what a GEMV does to its weight), copy (a = b)
// and triad (a = b + s c), STREAM-style, over arrays far larger than the
// caches, on 1 and on every hardware thread. Prints GB/s per kernel and
// thread count (bytes the kernel must move / best time of `--repeat`):
//
//   g++ -O3 -march=native -fopenmp bench/memory/bandwidth.cpp -o /tmp/bandwidth && /tmp/bandwidth
//   /tmp/bandwidth --mib=512 --repeat=10 --threads=1,2
//
// Kiln's decode figures (docs/performance.md) are read against the "read"
// row at the same thread count.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  size_t mib = 512;
  int repeat = 10;
  std::vector<int> threads;
};

bool parse(int argc, char **argv, Args &args) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *name) -> const char * {
      size_t n = std::strlen(name);
      return arg.compare(0, n, name) == 0 ? arg.c_str() + n : nullptr;
    };
    if (const char *v = value("--mib=")) {
      args.mib = std::strtoul(v, nullptr, 10);
    } else if (const char *v = value("--repeat=")) {
      args.repeat = std::atoi(v);
    } else if (const char *v = value("--threads=")) {
      for (const char *p = v; *p;) {
        args.threads.push_back(std::atoi(p));
        const char *comma = std::strchr(p, ',');
        p = comma ? comma + 1 : p + std::strlen(p);
      }
    } else {
      std::fprintf(stderr, "usage: %s [--mib=N] [--repeat=N] [--threads=1,2,...]\n", argv[0]);
      return false;
    }
  }
  if (args.mib < 64 || args.repeat < 1 ||
      std::any_of(args.threads.begin(), args.threads.end(), [](int t) { return t < 1; })) {
    std::fprintf(stderr, "bandwidth: --mib must be 64 or more, --repeat and --threads positive\n");
    return false;
  }
  if (args.threads.empty()) {
    args.threads.push_back(1);
    if (omp_get_num_procs() > 1)
      args.threads.push_back(omp_get_num_procs());
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Args args;
  if (!parse(argc, argv, args))
    return 2;
  size_t n = args.mib * 1024 * 1024 / sizeof(float); // a multiple of 64
  // First touched by the threads that use them (pages on their nodes).
  float *a = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  float *b = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  float *c = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  if (!a || !b || !c) {
    std::fprintf(stderr, "bandwidth: cannot allocate 3 x %zu MiB\n", args.mib);
    return 1;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = float(i % 7);
  }
  std::printf("arrays of %zu MiB, best of %d\n", args.mib, args.repeat);
  std::printf("%-6s %8s %10s\n", "kernel", "threads", "GB/s");
  volatile float sink = 0;
  for (int threads : args.threads) {
    omp_set_num_threads(threads);
    auto best = [&](auto &&kernel) {
      double fastest = 1e30;
      for (int r = 0; r < args.repeat; ++r) {
        double start = seconds();
        kernel();
        fastest = std::min(fastest, seconds() - start);
      }
      return fastest;
    };
    double read = best([&] {
      // 64 partial sums: a chain of dependent adds would bound the loop by
      // the add's latency, not by memory.
      float sum = 0;
#pragma omp parallel reduction(+ : sum)
      {
        float partial[64] = {};
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 64)
          for (int j = 0; j < 64; ++j)
            partial[j] += b[i + j];
        for (float p : partial)
          sum += p;
      }
      sink = sum;
    });
    double copy = best([&] {
#pragma omp parallel for simd schedule(static)
      for (size_t i = 0; i < n; ++i)
        a[i] = b[i];
    });
    double triad = best([&] {
#pragma omp parallel for simd schedule(static)
      for (size_t i = 0; i < n; ++i)
        a[i] = b[i] + 3.0f * c[i];
    });
    double bytes = double(n) * sizeof(float);
    std::printf("%-6s %8d %10.1f\n", "read", threads, bytes / read / 1e9);
    std::printf("%-6s %8d %10.1f\n", "copy", threads, 2 * bytes / copy / 1e9);
    std::printf("%-6s %8d %10.1f\n", "triad", threads, 3 * bytes / triad / 1e9);
  }
  std::free(a);
  std::free(b);
  std::free(c);
  return sink == 12345.0f ? 3 : 0;
}
