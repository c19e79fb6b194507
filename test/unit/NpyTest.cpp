//===- NpyTest.cpp - .npy I/O and the tools' tensor helpers ---------------===//

#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"
#include "TestArtifacts.h"

#include <cmath>
#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;
using ::testing::HasSubstr;

namespace {

/// A .npy file the way numpy writes it: version `major`, the dict padded to
/// a 64-byte boundary, then `data`.
std::string npyFile(const std::string &dict, const std::string &data,
                    int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += char(major);
  file += '\0';
  size_t n = header.size();
  file += char(n & 0xff);
  file += char((n >> 8) & 0xff);
  if (major != 1) {
    file += char((n >> 16) & 0xff);
    file += char((n >> 24) & 0xff);
  }
  return file + header + data;
}

std::string parseError(const std::string &bytes) {
  Tensor t;
  std::string error;
  EXPECT_FALSE(npy::parse(bytes.data(), bytes.size(), "x.npy", t, error));
  return error;
}

Tensor parseOk(const std::string &bytes) {
  Tensor t;
  std::string error;
  EXPECT_TRUE(npy::parse(bytes.data(), bytes.size(), "x.npy", t, error))
      << error;
  return t;
}

const std::string kSixFloats(24, '\x01');

} // namespace

TEST(Npy, RoundtripEveryDtype) {
  const kiln_dtype_t dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F16,
                                 KILN_DTYPE_F64, KILN_DTYPE_I8,
                                 KILN_DTYPE_I16, KILN_DTYPE_I32,
                                 KILN_DTYPE_I64, KILN_DTYPE_U8,
                                 KILN_DTYPE_BOOL, KILN_DTYPE_U16,
                                 KILN_DTYPE_U32, KILN_DTYPE_U64};
  const std::vector<int64_t> shapes[] = {{}, {0}, {3}, {2, 3, 4}, {1, 1, 5}};
  for (kiln_dtype_t dtype : dtypes) {
    for (const std::vector<int64_t> &shape : shapes) {
      Tensor t;
      t.dtype = dtype;
      t.shape = shape;
      support::fillRandom(t, 42);
      std::string bytes, error;
      ASSERT_TRUE(npy::encode(t, bytes, error)) << error;
      // Data starts 64-byte aligned, as numpy writes it.
      EXPECT_EQ((bytes.size() - t.data.size()) % 64, 0u);
      Tensor back = parseOk(bytes);
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.data, t.data);

      std::string path = tempPath("roundtrip.npy");
      ASSERT_TRUE(npy::write(path, t, error)) << error;
      Tensor read;
      ASSERT_TRUE(npy::read(path, read, error)) << error;
      EXPECT_EQ(read.data, t.data);
      EXPECT_FALSE(fileExists(path + ".tmp"));
    }
  }
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // np.save of np.zeros((2, 3), np.float32) + the variations numpy emits.
  Tensor t = parseOk(npyFile(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      kSixFloats));
  EXPECT_EQ(t.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  t = parseOk(npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }",
                      std::string(5, '\1')));
  EXPECT_EQ(t.dtype, KILN_DTYPE_BOOL);
  t = parseOk(npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                      std::string(8, '\0')));
  EXPECT_EQ(t.shape.size(), 0u);
  // Versions 2.0 and 3.0 have a 4-byte header length.
  for (int major : {2, 3}) {
    t = parseOk(npyFile(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
        kSixFloats, major));
    EXPECT_EQ(t.shape, (std::vector<int64_t>{6}));
  }
  // Double quotes, no trailing comma, native byte order, Python 2 longs.
  t = parseOk(npyFile(
      "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"=f4\"}",
      kSixFloats));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  // Fortran order does not matter with at most one dimension above 1.
  t = parseOk(npyFile(
      "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 6), }",
      kSixFloats));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 6}));
}

TEST(Npy, Errors) {
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(parseError("hello world, not numpy"),
            "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError(""), "x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError("\x93NUMPY\x01"), "x.npy: truncated .npy header");
  EXPECT_EQ(parseError(npyFile(dict, kSixFloats).substr(0, 40)),
            "x.npy: truncated .npy header (118 header bytes announced, 30 "
            "present)");
  EXPECT_EQ(parseError(npyFile(dict, kSixFloats.substr(0, 10))),
            "x.npy: truncated .npy data (the header describes 24 bytes, the "
            "file has 10)");
  EXPECT_EQ(parseError(npyFile(dict, kSixFloats + "xx")),
            "x.npy: 2 unexpected bytes after the array data");
  EXPECT_EQ(parseError(npyFile(dict, kSixFloats, 4)),
            "x.npy: unsupported .npy version 4.0");
  EXPECT_EQ(parseError(npyFile(
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                kSixFloats)),
            "x.npy: Fortran-order arrays are not supported (save a C-order "
            "array, e.g. with np.ascontiguousarray)");
  EXPECT_EQ(parseError(npyFile(
                "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
                kSixFloats)),
            "x.npy: big-endian data ('>f4') is not supported");
  EXPECT_EQ(parseError(npyFile(
                "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }",
                kSixFloats)),
            "x.npy: unsupported dtype '<c8' (supported: f2 f4 f8 i1 i2 i4 i8 "
            "u1 b1, little-endian)");
  EXPECT_THAT(parseError(npyFile(
                  "{'descr': '|O', 'fortran_order': False, 'shape': (6,), }",
                  kSixFloats)),
              HasSubstr("unsupported dtype '|O'"));
  EXPECT_EQ(parseError(npyFile("{'descr': [('a', '<f4')], 'fortran_order': "
                               "False, 'shape': (6,), }",
                               kSixFloats)),
            "x.npy: malformed .npy header: structured dtypes are not "
            "supported");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'shape': (6,), }",
                               kSixFloats)),
            "x.npy: malformed .npy header: the header lacks 'fortran_order'");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (6,), 'extra': 1}",
                               kSixFloats)),
            "x.npy: malformed .npy header: unexpected key 'extra' in the "
            "header");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (-6,), }",
                               kSixFloats)),
            "x.npy: malformed .npy header: 'shape' holds something other "
            "than non-negative integers");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4611686018427387904, "
                               "4611686018427387904), }",
                               kSixFloats)),
            "x.npy: the shape's element count overflows");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999999999999,), }",
                               kSixFloats)),
            "x.npy: malformed .npy header: a dimension in 'shape' is too "
            "large");
  EXPECT_EQ(parseError(npyFile("[1, 2, 3]", kSixFloats)),
            "x.npy: malformed .npy header: the header is not a dict");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': Maybe, "
                               "'shape': (6,)}",
                               kSixFloats)),
            "x.npy: malformed .npy header: 'fortran_order' is not True or "
            "False");
  EXPECT_EQ(parseError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (6,)} trailing",
                               kSixFloats)),
            "x.npy: malformed .npy header: unexpected text after the header "
            "dict");
}

TEST(Npy, EveryTruncationFailsCleanly) {
  Tensor t;
  t.dtype = KILN_DTYPE_I16;
  t.shape = {3, 5};
  support::fillRandom(t, 1);
  std::string bytes, error;
  ASSERT_TRUE(npy::encode(t, bytes, error));
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_NE(parseError(bytes.substr(0, n)), "") << n;
  // And every single-byte corruption of the header either parses or fails
  // with a message (never crashes or reads out of bounds).
  for (size_t i = 0; i < bytes.size() - t.data.size(); ++i) {
    for (char value : {'\0', '\'', '(', ')', ',', '9', '}', '\xff'}) {
      std::string patched = bytes;
      patched[i] = value;
      Tensor out;
      std::string message;
      if (!npy::parse(patched.data(), patched.size(), "p.npy", out,
                      message)) {
        EXPECT_THAT(message, HasSubstr("p.npy: "));
      }
    }
  }
}

TEST(Npy, FileErrors) {
  Tensor t;
  std::string error;
  EXPECT_FALSE(npy::read(tempPath("missing.npy"), t, error));
  EXPECT_THAT(error, HasSubstr("cannot open: No such file or directory"));
  EXPECT_FALSE(npy::read(::testing::TempDir(), t, error));
  EXPECT_THAT(error, HasSubstr("not a regular file"));

  t.dtype = KILN_DTYPE_BF16;
  t.shape = {2};
  t.data.resize(4);
  std::string path = tempPath("bf16.npy");
  EXPECT_FALSE(npy::write(path, t, error));
  EXPECT_EQ(error, path + ": bfloat16 has no .npy dtype");
  EXPECT_FALSE(fileExists(path));
  t.dtype = KILN_DTYPE_I16;
  EXPECT_FALSE(npy::write(tempPath("no-dir") + "/x.npy", t, error));
  EXPECT_THAT(error, HasSubstr("cannot create"));
}

//===----------------------------------------------------------------------===//
// TensorUtil
//===----------------------------------------------------------------------===//

TEST(TensorUtil, HalfConversionsRoundtrip) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = support::halfToFloat(uint16_t(bits));
    uint16_t back = support::floatToHalf(f);
    if (std::isnan(f))
      EXPECT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff)) << bits;
    else
      EXPECT_EQ(back, bits) << bits;
  }
  EXPECT_EQ(support::floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(support::floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(support::floatToHalf(65520.0f), 0x7c00); // ties to even: inf
  EXPECT_EQ(support::floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(support::floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(support::floatToHalf(1.0f + 0x1p-11f), 0x3c00); // tie: even
  EXPECT_EQ(support::floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(support::floatToHalf(0x1p-25f), 0x0000); // tie to even zero
  EXPECT_EQ(support::floatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(support::floatToHalf(1e-10f), 0x0000);
}

TEST(TensorUtil, Bfloat16) {
  EXPECT_EQ(support::floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(support::bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(support::floatToBfloat16(1.0f + 0x1p-8f), 0x3f80); // tie: even
  EXPECT_EQ(support::floatToBfloat16(1.0f + 0x1p-7f), 0x3f81);
  EXPECT_TRUE(std::isnan(
      support::bfloat16ToFloat(support::floatToBfloat16(std::nanf("")))));
}

TEST(TensorUtil, RandomFillIsDeterministicAndInRange) {
  Tensor a, b;
  a.dtype = b.dtype = KILN_DTYPE_F32;
  a.shape = b.shape = {1000};
  support::fillRandom(a, 5);
  support::fillRandom(b, 5);
  EXPECT_EQ(a.data, b.data);
  support::fillRandom(b, 6);
  EXPECT_NE(a.data, b.data);
  support::Summary s = support::summarize(a);
  EXPECT_GE(s.min, -1.0);
  EXPECT_LT(s.max, 1.0);
  EXPECT_LT(std::fabs(s.mean), 0.1);
  EXPECT_LT(s.min, -0.9);
  EXPECT_GT(s.max, 0.9);

  for (kiln_dtype_t dtype : {KILN_DTYPE_I8, KILN_DTYPE_I32, KILN_DTYPE_I64,
                             KILN_DTYPE_U8, KILN_DTYPE_I16}) {
    Tensor t;
    t.dtype = dtype;
    t.shape = {500};
    support::fillRandom(t, 9);
    s = support::summarize(t);
    EXPECT_EQ(s.min, 0);
    EXPECT_EQ(s.max, 3);
  }
  Tensor flags;
  flags.dtype = KILN_DTYPE_BOOL;
  flags.shape = {100};
  support::fillRandom(flags, 1);
  s = support::summarize(flags);
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 1);

  EXPECT_EQ(support::inputSeed(0, "x"), support::inputSeed(0, "x"));
  EXPECT_NE(support::inputSeed(0, "x"), support::inputSeed(0, "y"));
  EXPECT_NE(support::inputSeed(0, "x"), support::inputSeed(1, "x"));
}

TEST(TensorUtil, SummarySkipsNans) {
  Tensor t;
  t.dtype = KILN_DTYPE_F32;
  t.shape = {3};
  float values[3] = {2.0f, std::nanf(""), -4.0f};
  t.data.assign(reinterpret_cast<unsigned char *>(values),
                reinterpret_cast<unsigned char *>(values) + 12);
  support::Summary s = support::summarize(t);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.nanCount, 1u);
  EXPECT_EQ(s.min, -4.0);
  EXPECT_EQ(s.max, 2.0);
  EXPECT_EQ(s.mean, -1.0);
}

TEST(TensorUtil, Helpers) {
  EXPECT_EQ(support::sanitizeFileName("out/logits:0"), "out_logits_0");
  EXPECT_EQ(support::sanitizeFileName(".."), "_.");
  EXPECT_EQ(support::sanitizeFileName(""), "output");
  EXPECT_EQ(support::sanitizeFileName("a b.c-d_e"), "a_b.c-d_e");
  uint64_t u;
  EXPECT_TRUE(support::parseUint64("18446744073709551615", u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(support::parseUint64("18446744073709551616", u));
  EXPECT_FALSE(support::parseUint64("-1", u));
  EXPECT_FALSE(support::parseUint64("", u));
  EXPECT_FALSE(support::parseUint64("12x", u));
  double d;
  EXPECT_TRUE(support::parseDouble("0.5", d));
  EXPECT_EQ(d, 0.5);
  EXPECT_FALSE(support::parseDouble("1e999", d));
  EXPECT_FALSE(support::parseDouble("nan", d));
  EXPECT_FALSE(support::parseDouble("1s", d));
  EXPECT_EQ(support::jsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(support::shapeString({}), "[]");
  EXPECT_EQ(support::shapeString({4, 8}), "[4, 8]");
}
