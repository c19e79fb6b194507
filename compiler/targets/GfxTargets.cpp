//===- GfxTargets.cpp - The gfx targets Kiln compiles for -----------------===//
//
// The table, and where each number in it comes from.
//
// Occupancy facts. The model is the one LLVM's AMDGPU backend uses for the
// "; Occupancy: N" it prints with each kernel, plus the LDS allocation
// granule (see Occupancy.cpp). Sources:
// [BaseInfo] llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp (IsaInfo):
//   getTotalNumVGPRs (512 with gfx90a insts; 1536/768 in wave32/64 with the
//   1.5x VGPR feature of gfx11/gfx12; 1024/512 otherwise on gfx10+),
//   getVGPRAllocGranule (8 with gfx90a insts; 24/12 with 1.5x VGPRs),
//   getMaxWavesPerEU (8 on gfx90a+, 16 on gfx10.3+), getEUsPerCU (4; 2 in CU
//   mode), getLocalMemorySize (doubled in WGP mode), getMaxWorkGroupsPerCU
//   (16 barriers, 32 in WGP mode), getOccupancyWithNumSGPRs (gfx8/9:
//   10/9/8/7 waves at <=80/<=88/<=100/more SGPRs; gfx10+ unlimited).
// [td] llvm/lib/Target/AMDGPU/AMDGPU.td: the addressable local memory size
//   features, 65536 (gfx942, gfx11, gfx12), 163840 (gfx950) and 327680
//   (gfx1250); Feature1024AddressableVGPRs (gfx1250). LLVM 22's llc rejects
//   more LDS per workgroup than these.
// [Usage] llvm/docs/AMDGPUUsage.rst, COMPUTE_PGM_RSRC2 LDS_SIZE granularity:
//   128 dwords (512 B), 320 dwords (1280 B) on GFX950, 512 dwords (2048 B) on
//   GFX125* (llvm-project PR #167614); wavefront sizes in the processor
//   table.
// [probe] Checked on this toolchain (LLVM 22.1): llc's "; Occupancy:" for
//   VGPR counts 1-256 and for LDS of 4-64 KiB at workgroup sizes 64/256/1024
//   on every target below matches this model without the LDS granule, and
//   the COMPUTE_PGM_RSRC2.LDS_SIZE llc writes (amdpal, for 513 and 2049
//   bytes) shows the granules: 512 B on gfx942, gfx1100 and gfx1201, 1280 B
//   on gfx950, 2048 B on gfx1250.
// gfx1250 (1024 VGPRs, granule 16, 320 KiB LDS per CU, no WGP mode) has no
// public ISA guide yet: its numbers are LLVM 22's model only, so they are
// marked provisional and kiln-inspect says so.
//
// Matrix instructions. Shapes and per-lane element counts: m*k / wave (A),
// m*n / wave (C/D); RDNA3's WMMA duplicates A and B across the two
// half-waves, so each lane holds all 16 of its row's k elements. Mnemonics
// as LLVM 22 prints them. The lane layouts of gfx942, gfx1100 and gfx1201
// are checked element by element against AMD's matrix instruction
// calculator tables (test/unit/GfxTargetsTest.cpp, data in
// test/unit/Inputs/matrix-layouts); the same test checks every instruction
// of every chip against the emulator's independent table
// (runtime/src/EmuMatrix.cpp). gfx950 and gfx1250 are not in AMD's tables:
// - gfx950: the gfx942 instructions, plus the double-K ones, where lane
//   group g holds k = 8g.. (16-bit) or 16g.. (8-bit), contiguous, as for
//   gfx942 with K doubled per lane group (composable_kernel's
//   xdlops_gemm.hpp: k_per_blk 8 / 16);
// - gfx1250: RDNA4's split, where lane group g holds the blocks g, g + 2,
//   ... of K, in blocks of K / 4 elements (AMD's rocjitsu mma_layout.h for
//   gfx1250 wave32, citing the CDNA5 ISA guide section 7.12.2: for 16 x K
//   with K >= 32, blocks of (K / 2) / 2 consecutive K alternating between
//   the half-waves): 8 for f16 / bf16 (K 32), 16 for iu8 (K 64).
// - f32 (v_mfma_f32_16x16x4_f32, gfx942 and gfx950): one element per lane,
//   lane group g holding k = g (the cdna3 table; composable_kernel's
//   xdlops_gemm.hpp gives gfx950 the same: mfma_f32_16x16x4f32, k_per_blk
//   1, 4 input blocks of 16 lanes).
// RDNA4's 16-bit layout is such a split (lane group g: k = 4g..4g+3 and
// 8+4g..8+4g+3); the table test caught a contiguous guess here once, and
// the emulator comparison caught 8-element iu8 blocks on gfx1250.
//
// Products (roofline figures): vendor peaks, dense (no sparsity).
// [MI300X] AMD Instinct MI300X data sheet / product page: 304 CUs, 2100 MHz
//   peak engine clock, 1307.4 TFLOP/s dense f16 and bf16, 2614.9 TOPS dense
//   int8, 192 GB HBM3 at 5.3 TB/s, 750 W OAM board power (also reported by
//   Tom's Hardware, 2023-06). The clock agrees with the rate: 304 CUs x 2048
//   f16 flop/clock x 2.1 GHz = 1307.4 TFLOP/s. In practice hipBLASLt reaches
//   ~654 TFLOP/s f16 (clocks drop to ~1.1-1.2 GHz under matrix load) and
//   ~4 TB/s of HBM bandwidth (DESIGN.md "More facts").
// [MI325X] AMD Instinct MI325X data sheet: the MI300X's compute (304 CUs,
//   same peaks), 256 GB HBM3E at 6 TB/s, 1000 W.
// [MI355X] AMD Instinct MI350 series launch (2025-06; The Register, Tom's
//   Hardware): 256 CUs, 288 GB HBM3E at 8 TB/s, 1400 W (MI350X: 1000 W);
//   ~2.5 PFLOP/s dense f16/bf16 (AMD lists 2.5 PF). The 2400 MHz peak clock
//   is AMD's figure and agrees with ISSCC 2026 (8192 fp8 flop/clock per CU:
//   256 x 8192 x 2.4 GHz = 5.0 PF fp8). Dense int8: 5.0 POPS, the fp8 rate
//   (AMD's launch figures as reported by svethardware.cz, 2025-06: int8 and
//   int4 5 POPS dense, 10.1 with sparsity; fp32 vector 157.3 TFLOP/s); the
//   ISA agrees: v_mfma_i32_16x16x64_i8 takes as many passes as
//   v_mfma_f32_16x16x32_f16, twice the operations.
// [MI350X] The same 256 CUs at a 2200 MHz peak clock, 1000 W, air cooled
//   (AMD at Hot Chips 2025, reported by wccftech, 2025-08; svethardware.cz):
//   the MI355X's rates per CU and clock at that clock: 256 x 4096 f16
//   flop/clock x 2.2 GHz = 2306.9 TFLOP/s (AMD lists 2.3 PF), int8 twice
//   that (4613.7 TOPS, AMD: 4.6 POPS), fp32 vector 256 x 128 x 2 x 2.2 GHz =
//   144.2 TFLOP/s.
// [MI455X] AMD's announcement (third-party notes tie it to gfx1250): 432 GB
//   HBM4 at ~19.6 TB/s; the rest unknown.
// [W7900] AMD Radeon PRO W7900 specifications: 96 CUs, 2495 MHz boost
//   clock, 48 GB GDDR6 at 864 GB/s, 295 W, 61.3 TFLOP/s fp32 vector and
//   122.6 TFLOP/s f16 (DESIGN.md "More facts": ~123). RDNA3's WMMA runs
//   f16, bf16 and iu8 at one rate (256 flop/clock per SIMD: 96 CUs x 2
//   SIMDs x 256 x 2.495 GHz = 122.6), so bf16 and int8 take the f16
//   figure.
// [R9700] AMD Radeon AI PRO R9700 product page (2025-07): 64 CUs, 2920 MHz
//   boost clock, 32 GB GDDR6 at 640 GB/s, 300 W board power, 47.8 TFLOP/s
//   fp32 vector, 191 TFLOP/s f16 matrix and 383 TOPS int8 dense (twice with
//   sparsity). The rates agree with the clock: 64 x 1024 f16 flop/clock x
//   2.92 GHz = 191.4.
// Vector fp32 peaks: [MI300X] 163.4 TFLOP/s (304 CUs x 128 FMA lanes x 2 x
//   2.1 GHz); [MI355X] 157.3 TFLOP/s (256 x 128 x 2 x 2.4 GHz), AMD's data
//   sheets.
// Sustained clock: MI300X under sustained matrix load runs at ~1.1-1.2 GHz
//   (public measurements; DESIGN.md "More facts"), and hipBLASLt's
//   ~654 TFLOP/s f16 is ~94% of the peak at that clock. Kiln keeps 1150 MHz;
//   the performance model times matrix-bound kernels at it.
//
// Performance figures (PerfFigures). SIMDs per CU: 4 on CDNA and gfx1250
// (the occupancy facts above), 2 on RDNA (a WGP's 4 SIMDs are two CUs'). LDS
// bandwidth per CU and clock: 128 B (CDNA3 white paper: 32 banks x 4 B; the
// RDNA white paper: 32 banks x 4 B per CU half of a WGP), 256 B on CDNA4
// (CDNA4 white paper: LDS grown to 160 KiB with its read bandwidth
// doubled); gfx1250 unknown. LLVM's scheduling model counts CDNA's
// instructions in passes of 4 clocks (a wave64 VALU op takes 4 clocks on a
// 16-lane SIMD; its v_mfma_f32_16x16x16_f16 takes 4 passes, and 16 clocks
// is what the MI300X's rate gives: 16*16*16*2 flop / 512 flop per clock
// per SIMD); PerfModelTest checks that pass count against every
// instruction's rate. Its gfx11/gfx12 models carry placeholder latencies
// (2000-cycle barriers), so those targets use Kiln's cost table.
//
//===----------------------------------------------------------------------===//

#include "targets/GfxTargets.h"

#include <algorithm>
#include <cctype>

namespace kiln::gfx {

int bitsOf(MatrixInput input) {
  switch (input) {
  case MatrixInput::F32:
    return 32;
  case MatrixInput::F16:
  case MatrixInput::BF16:
    return 16;
  case MatrixInput::I8:
    return 8;
  case MatrixInput::I4:
    return 4;
  }
  return 0;
}

std::optional<double> Product::matrixPeak(MatrixInput input) const {
  std::optional<double> tera;
  switch (input) {
  case MatrixInput::F16:
    tera = f16Tflops;
    break;
  case MatrixInput::BF16:
    tera = bf16Tflops;
    break;
  case MatrixInput::I8:
  case MatrixInput::I4: // at least the int8 rate (RDNA's iu4 WMMA: the same or twice)
    tera = int8Tops;
    break;
  case MatrixInput::F32:
    // AMD's data sheets give the same dense FP32 matrix and vector peaks
    // on MI300X, MI325X (163.4), MI350X (144.2) and MI355X (157.3).
    tera = f32Tflops;
    break;
  }
  if (!tera)
    return std::nullopt;
  return *tera * 1e12;
}

const MatrixInstruction *Target::gemmInstruction(MatrixInput input, int64_t size) const {
  const MatrixInstruction *best = nullptr;
  for (const MatrixInstruction &inst : matrix)
    if (inst.input == input && inst.m == size && inst.n == size && (!best || inst.k > best->k))
      best = &inst;
  return best;
}

const GemmTiling *Target::largeTiling(const MatrixInstruction &inst, bool w4a16) const {
  if (largeGemm.wavesM <= 0 || (w4a16 && !largeGemmW4A16))
    return nullptr;
  return &largeGemm;
}

int64_t Target::largestComputeUnits() const {
  auto largest = [](const std::vector<Product> &of, int64_t units) {
    for (const Product &product : of)
      units = std::max<int64_t>(units, product.computeUnits.value_or(0));
    return units;
  };
  int64_t units = largest(products, 0);
  // A target none of whose products has a published size (gfx1250) is
  // taken to be as large as the largest chip in the table.
  if (units == 0)
    for (const Target &other : allTargets())
      units = largest(other.products, units);
  return units;
}

const GemmTiling &Target::gemmTiling(const MatrixInstruction &inst, int64_t batch, int64_t m,
                                     int64_t n, bool w4a16) const {
  if (!largeTiling(inst, w4a16) || largeGemmWorkgroupsPerCU <= 0)
    return gemm;
  // gfx1250's large tiling needs the grid that fills the largest chip in
  // the table twice over.
  int64_t computeUnits = largestComputeUnits();
  int64_t tileM = largeGemm.wavesM * largeGemm.waveTilesM * inst.m;
  int64_t tileN = largeGemm.wavesN * largeGemm.waveTilesN * inst.n;
  int64_t tiles = std::max<int64_t>(1, batch) * ((m + tileM - 1) / tileM) * ((n + tileN - 1) / tileN);
  return tiles >= largeGemmWorkgroupsPerCU * computeUnits ? largeGemm : gemm;
}

const MatrixInstruction *Target::instruction(std::string_view mnemonic) const {
  for (const MatrixInstruction &inst : matrix)
    if (mnemonic == inst.mnemonic)
      return &inst;
  return nullptr;
}

namespace {
constexpr std::nullopt_t unknown = std::nullopt;
constexpr MatrixInput F16 = MatrixInput::F16;
constexpr MatrixInput BF16 = MatrixInput::BF16;
constexpr MatrixInput I8 = MatrixInput::I8;
constexpr MatrixInput I4 = MatrixInput::I4;
constexpr MatrixInput F32 = MatrixInput::F32;

// CDNA3's MFMA instructions (gfx950 has them too).
// Columns: input, wmma, m, n, k, A/B per lane, C/D per lane, mnemonic,
// kChunk, kGroupStride, kBlockStride, dChunk, dGroupStride, dBlockStride.
// clang-format off
#define KILN_CDNA3_MFMA                                                                            \
  {F16,  false, 16, 16, 16, 4, 4,  "v_mfma_f32_16x16x16_f16",  4, 4, 16, 4, 4, 16},                 \
  {BF16, false, 16, 16, 16, 4, 4,  "v_mfma_f32_16x16x16_bf16", 4, 4, 16, 4, 4, 16},                 \
  {I8,   false, 16, 16, 32, 8, 4,  "v_mfma_i32_16x16x32_i8",   8, 8, 32, 4, 4, 16},                 \
  {F16,  false, 32, 32, 8,  4, 16, "v_mfma_f32_32x32x8_f16",   4, 4, 8,  4, 4, 8},                  \
  {BF16, false, 32, 32, 8,  4, 16, "v_mfma_f32_32x32x8_bf16",  4, 4, 8,  4, 4, 8},                  \
  {I8,   false, 32, 32, 16, 8, 16, "v_mfma_i32_32x32x16_i8",   8, 8, 16, 4, 4, 8},                  \
  {F32,  false, 16, 16, 4,  1, 4,  "v_mfma_f32_16x16x4_f32",   1, 1, 4,  4, 4, 16}
// clang-format on

// The GEMM builder's tiling on every target: 2 x 2 waves of 2 x 2
// instruction tiles, two instructions deep per K step (a 64 x 64 output
// tile with 16 x 16 instructions; what DESIGN.md's probe compiled without
// spills on gfx942 and gfx1100).
constexpr GemmTiling kTiling = {2, 2, 2, 2, 2};
// Large GEMMs on CDNA: 4 x 4 instruction tiles per wave (a 128 x 128 output
// tile), when the grid still gives every CU two workgroups. kiln-inspect
// --perf estimates the 4096^3 f16 GEMM on MI300X at 336 us with kTiling
// (LDS-bandwidth-bound: each MFMA's fragments are read for 2 x 2 tiles) and
// 195 us with this one (a quarter of the LDS reads per MFMA); it needs 158
// VGPRs (2 waves/SIMD) and 32 KiB LDS on gfx942, 190 and 64 KiB on gfx950,
// no spills, for f16, bf16, i8 and the u8 x i8 correction. On gfx1100 too:
// 4096^3 f16 one wave 2.47x -> 1.43x the matrix-pipe bound (Kiln's cost
// table), the WMMA share of the loop 10% -> 18%, W7900 1.27 -> 1.19 ms;
// 228 VGPRs (i8 244), no spills; W4A16 keeps kTiling there (223 VGPRs
// spilled). gfx1250, whose products have no published size, is sized as the
// largest chip in the table (gemmTiling()). Each target's copy of it
// (below) picks its step schedules.
// The step schedules (StepSchedule) below: one wave of the 4096^3 GEMM
// against the matrix-pipe bound (LLVM MCA on CDNA, Kiln's cost table on
// RDNA and gfx1250), operands read by buffer loads, 8-bit B panels staged
// as transposed 4 x 4 byte blocks; LLVM's own order / matrix groups /
// interleaved:
//   gfx942  f16 1.69x / 1.54x / 1.20x   i8 1.76x / 1.67x / 1.58x
//   gfx950  f16 1.60x / 1.73x / 1.37x   i8 1.75x / 1.87x / 1.62x
//   gfx1100 f16 1.25x / 1.43x / 2.10x   i8 1.41x / 1.27x / 1.14x
//   gfx1201 f16 2.31x / 1.98x / 1.63x   i8 3.84x / 3.40x / 3.25x
//   gfx1250 f16 6.86x / 6.84x / 6.75x   i8 4.07x / 4.43x / 3.86x
// gfx1100's interleaved f16 kernel reaches 256 VGPRs. (The i8 figures are
// before the large tiling's int8 panels were swizzled; interleaved and
// swizzled: gfx942 1.48x, gfx950 1.79x, gfx1100 1.13x. gfx1250's are with
// kTiling; its large tiling below: f16 2.95x / 3.06x / 2.41x, i8 2.35x /
// 2.27x / 2.09x.)
// Global loads two K steps ahead (GemmTiling::loadAhead16/8; GemmBuilder's
// mainLoop): on by default, off where a large tiling does not gain by it.
// One wave against the bound, loads one step ahead -> two (VGPRs, waves per
// SIMD after):
//   1024^3 (small tiling)  f16                  i8
//   gfx942                 2.44x -> 1.61x       3.89x -> 2.14x
//   gfx950                 3.87x -> 2.09x       5.53x -> 3.27x
//   gfx1100                1.62x -> 1.20x       2.40x -> 1.25x
//   gfx1201                2.50x -> 1.38x       6.62x -> 3.32x
//   gfx1250                6.75x -> 3.32x       3.86x -> 2.38x
//   4096^3 (large tilings)
//   gfx942                 1.20x -> 1.19x (off) 1.48x -> 1.43x (172, 2)
//   gfx950                 1.37x -> 1.30x, 264 VGPRs, one wave per SIMD (off)
//                                               1.79x -> 1.78x (off)
//   gfx1100                1.25x -> 1.25x (off) 1.13x -> 1.13x (off)
//   gfx1201                1.62x -> 1.55x (194, 7)  3.25x -> 1.63x (118, 12)
//   gfx1250                2.41x -> 2.45x (off) 2.09x -> 1.90x (459, 2)
// (gfx1201's int8 gain needs the main loop's LDS barriers: a gpu.barrier
// waited for every global load in flight there, s_wait_loadcnt_dscnt 0.)
// 32 x 32 MFMAs (GemmTiling::wide16/8), each in place of 2 x 2 16 x 16
// tiles: half the matrix instructions per wave tile, each twice as long, so
// the loop's other instructions find issue slots between them. 4096^3, one
// wave against the bound, best schedule and loads (VGPRs, waves per SIMD):
//   gfx950 f16: 1.37x -> 1.22x (matrix groups, loads two steps ahead; 244, 2)
//   gfx942 i8:  1.43x -> 1.33x (matrix groups; 112, 4)
//   gfx942 f16: 1.20x -> 1.19x, but 236 VGPRs, one wave: kept 16 x 16
//   gfx950 i8:  1.79x -> 1.87x: kept 16 x 16
// The small tiling would gain too (1024^3 f16: gfx942 1.61x -> 1.36x,
// MI300X 5.7 -> 5.3 us; gfx950 2.09x -> 1.98x; int8 loses: gfx942 2.14x ->
// 4.89x) and is not switched yet.
constexpr GemmTiling kCdna3LargeTiling = {2, 2, 4, 4, 2, StepSchedule::Interleaved,
                                          StepSchedule::Matrix, false, true, false, true};
constexpr GemmTiling kCdna4LargeTiling = {2, 2, 4, 4, 2, StepSchedule::Matrix,
                                          StepSchedule::Interleaved, true, false, true, false};
constexpr GemmTiling kRdna3LargeTiling = {2, 2, 4, 4, 2, StepSchedule::Llvm,
                                          StepSchedule::Interleaved, false, false};
constexpr GemmTiling kGfx1250Tiling = {2, 2, 2, 2, 2, StepSchedule::Interleaved,
                                       StepSchedule::Interleaved};
// gfx1250's large tiling: CDNA's shape in wave32 (128 threads), a 128 x 128
// tile. Its 1024 VGPRs hold it at 422 (f16), 401 (i8), 426 (W4A16), no
// spills, two waves per SIMD; past 256 VGPRs LLVM switches register banks
// with s_set_vgpr_msb (141 of the f16 loop's 559 instructions). One wave of
// the 4096^3 GEMM: f16 6.75x -> 2.41x the bound, i8 3.86x -> 2.09x. One
// instruction per K step instead of two: f16 3.52x (a barrier per 16
// WMMAs).
constexpr GemmTiling kGfx1250LargeTiling = {2, 2, 4, 4, 2, StepSchedule::Interleaved,
                                            StepSchedule::Interleaved, false, true};
// RDNA4's large tiling: 2 x 4 waves (256 threads of wave32) of 4 x 2
// instruction tiles, also a 128 x 128 output tile. With CDNA's its f16
// and bf16 kernels spilled 4 VGPRs; this one needs 195 (i8 120), no spills:
// 4096^3 f16 one wave 3.93x -> 2.25x the bound, R9700 867 -> 807 us; i8
// 6.80x -> 3.95x, 466 -> 414 us.
constexpr GemmTiling kRdna4LargeTiling = {2, 4, 4, 2, 2, StepSchedule::Interleaved,
                                          StepSchedule::Interleaved};
} // namespace

std::optional<StepSchedule> parseStepSchedule(std::string_view name) {
  if (name == "llvm")
    return StepSchedule::Llvm;
  if (name == "matrix")
    return StepSchedule::Matrix;
  if (name == "interleaved")
    return StepSchedule::Interleaved;
  return std::nullopt;
}

const std::vector<Target> &allTargets() {
  // Occupancy columns: max waves per SIMD, VGPR file, VGPR granule, wave64
  // halves the file, AGPRs in the VGPR count, SGPRs limit, LDS block, SIMDs
  // per block, LDS per block, LDS per workgroup, LDS granule, workgroups per
  // block, provisional.
  // Then the instructions, the GEMM tiling, and the products with their
  // columns: name, CUs, peak clock (MHz), f16, bf16 (TFLOP/s), int8
  // (TOPS), memory (GB), bandwidth (GB/s), board power (W), fp32 vector
  // (TFLOP/s), sustained matrix clock (MHz); last the performance figures:
  // SIMDs per CU, LDS bytes per clock per CU, clocks per LLVM model cycle.
  // clang-format off
  static const std::vector<Target> targets = {
      // CDNA3. VGPRs and AGPRs share 512 registers per lane [BaseInfo];
      // 64 KiB LDS per CU [td]; 512 B LDS granule [Usage].
      {"gfx942", "CDNA3", "MI300X, MI325X (CDNA3)",
       {"mi300x", "mi300a", "mi300", "mi325x"},
       64,
       8, 512, 8, false, true, true, "CU", 4, 65536, 65536, 512, 16, false,
       {KILN_CDNA3_MFMA},
       kTiling,
       {{"MI300X", 304, 2100, 1307.4, 1307.4, 2614.9, 192, 5300, 750, 163.4, 1150},
        {"MI325X", 304, 2100, 1307.4, 1307.4, 2614.9, 256, 6000, 1000, 163.4, unknown}},
       {4, 128, 4},
       kCdna3LargeTiling, 2},
      // CDNA4: as gfx942 with 160 KiB LDS [td] allocated in 1280 B blocks
      // [Usage].
      {"gfx950", "CDNA4", "MI350X, MI355X (CDNA4)",
       {"mi350x", "mi355x", "mi350", "mi355"},
       64,
       8, 512, 8, false, true, true, "CU", 4, 163840, 163840, 1280, 16, false,
       {KILN_CDNA3_MFMA,
        {F16,  false, 16, 16, 32, 8,  4,  "v_mfma_f32_16x16x32_f16",  8,  8,  32, 4, 4, 16},
        {BF16, false, 16, 16, 32, 8,  4,  "v_mfma_f32_16x16x32_bf16", 8,  8,  32, 4, 4, 16},
        {I8,   false, 16, 16, 64, 16, 4,  "v_mfma_i32_16x16x64_i8",   16, 16, 64, 4, 4, 16},
        {F16,  false, 32, 32, 16, 8,  16, "v_mfma_f32_32x32x16_f16",  8,  8,  16, 4, 4, 8},
        {BF16, false, 32, 32, 16, 8,  16, "v_mfma_f32_32x32x16_bf16", 8,  8,  16, 4, 4, 8},
        {I8,   false, 32, 32, 32, 16, 16, "v_mfma_i32_32x32x32_i8",   16, 16, 32, 4, 4, 8}},
       kTiling,
       {{"MI350X", 256, 2200, 2306.9, 2306.9, 4613.7, 288, 8000, 1000, 144.2, unknown},
        {"MI355X", 256, 2400, 2500, 2500, 5000, 288, 8000, 1400, 157.3, unknown}},
       {4, 256, 4},
       kCdna4LargeTiling, 2},
      // MI400 series: 1024 VGPRs, granule 16, 16 waves per SIMD, 320 KiB
      // LDS per CU in 2048 B blocks, 4 SIMDs and 16 workgroups per CU
      // (LLVM 22's model [probe], [td], [Usage]; provisional).
      {"gfx1250", "gfx12.5", "MI400 series: MI450, MI455X",
       {"mi450", "mi450x", "mi455x", "mi400"},
       32,
       16, 1024, 16, false, false, false, "CU", 4, 327680, 327680, 2048, 16, true,
       {{F16,  true, 16, 16, 32, 16, 8, "v_wmma_f32_16x16x32_f16",  8,  8,  16, 8, 8, 16},
        {BF16, true, 16, 16, 32, 16, 8, "v_wmma_f32_16x16x32_bf16", 8,  8,  16, 8, 8, 16},
        {I8,   true, 16, 16, 64, 32, 8, "v_wmma_i32_16x16x64_iu8",  16, 16, 32, 8, 8, 16}},
       kGfx1250Tiling,
       {{"MI455X", unknown, unknown, unknown, unknown, unknown, 432, 19600, unknown, unknown,
         unknown}},
       {4, 0, 0},
       kGfx1250LargeTiling, 2},
      // RDNA3: 1536 VGPRs per lane in wave32, granule 24 [BaseInfo]; 64 KiB
      // per workgroup [td], 128 KiB per WGP (4 SIMDs, 32 workgroups) in the
      // default WGP mode [BaseInfo].
      {"gfx1100", "RDNA3", "RDNA3: Radeon PRO W7900, RX 7900 XTX",
       {"w7900", "rx7900xtx", "7900xtx", "rdna3"},
       32,
       16, 1536, 24, true, false, false, "WGP", 4, 131072, 65536, 512, 32, false,
       {{F16,  true, 16, 16, 16, 16, 8, "v_wmma_f32_16x16x16_f16",  16, 0, 16, 1, 1, 2},
        {BF16, true, 16, 16, 16, 16, 8, "v_wmma_f32_16x16x16_bf16", 16, 0, 16, 1, 1, 2},
        {I8,   true, 16, 16, 16, 16, 8, "v_wmma_i32_16x16x16_iu8",  16, 0, 16, 1, 1, 2},
        {I4,   true, 16, 16, 16, 16, 8, "v_wmma_i32_16x16x16_iu4",  16, 0, 16, 1, 1, 2}},
       kTiling,
       {{"W7900", 96, 2495, 122.6, 122.6, 122.6, 48, 864, 295, 61.3, unknown}},
       {2, 128, 0},
       kRdna3LargeTiling, 2, false},
      // RDNA4: the same occupancy figures as gfx1100.
      {"gfx1201", "RDNA4", "RDNA4: Radeon AI PRO R9700, RX 9070 XT",
       {"r9700", "rx9070xt", "9070xt", "rdna4"},
       32,
       16, 1536, 24, true, false, false, "WGP", 4, 131072, 65536, 512, 32, false,
       {{F16,  true, 16, 16, 16, 8,  8, "v_wmma_f32_16x16x16_f16",  4,  4,  8,  8, 8, 16},
        {BF16, true, 16, 16, 16, 8,  8, "v_wmma_f32_16x16x16_bf16", 4,  4,  8,  8, 8, 16},
        {I8,   true, 16, 16, 16, 8,  8, "v_wmma_i32_16x16x16_iu8",  8,  8,  16, 8, 8, 16},
        {I4,   true, 16, 16, 16, 8,  8, "v_wmma_i32_16x16x16_iu4",  8,  8,  16, 8, 8, 16},
        {I4,   true, 16, 16, 32, 16, 8, "v_wmma_i32_16x16x32_iu4",  16, 16, 32, 8, 8, 16}},
       kTiling,
       {{"R9700", 64, 2920, 191.4, 191.4, 382.7, 32, 640, 300, 47.8, unknown}},
       {2, 128, 0},
       kRdna4LargeTiling, 2},
  };
  // clang-format on
  return targets;
}

const Target *lookupTarget(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  for (const Target &target : allTargets()) {
    if (lower == target.name)
      return &target;
    for (const char *chip : target.chips)
      if (lower == chip)
        return &target;
  }
  return nullptr;
}

std::string knownTargets() {
  std::string out;
  for (const Target &target : allTargets()) {
    if (!out.empty())
      out += ", ";
    out += std::string(target.name) + " (";
    for (size_t i = 0; i < target.chips.size(); ++i)
      out += (i ? ", " : "") + std::string(target.chips[i]);
    out += ")";
  }
  return out;
}

std::string knownTargetNames() {
  std::string out;
  for (const Target &target : allTargets())
    out += (out.empty() ? "" : ", ") + std::string(target.name);
  return out;
}

} // namespace kiln::gfx
