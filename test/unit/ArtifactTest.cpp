//===- ArtifactTest.cpp - Artifact writer, reader and validator -----------===//
//
// Roundtrips through ArtifactWriter and the runtime's reader, then one test
// per validation failure, each crafted by patching the bytes of a valid
// artifact (with the checksum recomputed where the check under test comes
// after it) or by writing a manifest the writer would normally refuse.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"

#include "ArtifactFormat.h"
#include "kiln/artifact.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>

using namespace kiln;
using namespace kiln::artifact;
using namespace kiln::test;
using ::testing::HasSubstr;

namespace {

// Section table entry `i` field offsets.
size_t entryKind(size_t i) { return 64 + 32 * i + 0; }
size_t entryOffset(size_t i) { return 64 + 32 * i + 8; }
size_t entrySize(size_t i) { return 64 + 32 * i + 16; }

/// The checksum as the format doc defines it, written independently of the
/// streaming implementation: words of the zero-padded file, field zeroed.
uint64_t referenceChecksum(std::string bytes) {
  for (int i = 24; i < 32; ++i)
    bytes[i] = 0;
  while (bytes.size() % 8)
    bytes.push_back(0);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b)
      w = (w << 8) | uint8_t(bytes[i + b]);
    h = (h ^ w) * 0x100000001b3ull;
  }
  return h;
}

std::unique_ptr<rt::Artifact> openOk(const std::string &bytes) {
  std::unique_ptr<rt::Artifact> artifact;
  Status status(rt::Artifact::openMemory(bytes.data(), bytes.size(),
                                         "test.kiln", artifact));
  EXPECT_TRUE(status.ok()) << status.message();
  return artifact;
}

} // namespace

//===----------------------------------------------------------------------===//
// Roundtrip
//===----------------------------------------------------------------------===//

TEST(ArtifactWriter, RoundtripEverything) {
  std::vector<float> weights(100);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = float(i) * 0.5f;
  const char bias[3] = {1, 2, 3};

  ArtifactWriter writer;
  writer.setProducer("kiln-compile 0.1");
  writer.setOptions("--target=cpu");
  writer.setModel("model.onnx");
  EXPECT_EQ(writer.addConstant(bias, sizeof(bias)), 0u);
  EXPECT_EQ(writer.addConstant(weights.data(), weights.size() * 4), 64u);
  EXPECT_EQ(writer.addConstantCopy(bias, 1), 64u + 448u);
  EXPECT_EQ(writer.constantsSize(), 64u + 448u + 1u);
  writer.addInput({"input", DType::I64, {2, 3}});
  writer.addOutput({"out/logits:0", DType::F16, {7}});
  writer.addOutput({"scalar", DType::Bool, {}});

  CodeObjectDesc cpu;
  cpu.target = "cpu";
  cpu.triple = "x86_64-unknown-linux-gnu";
  cpu.cpu = "x86-64-v3";
  cpu.features = "+avx2,+fma";
  cpu.format = "elf-shared-object";
  cpu.bytes = "not really code";
  cpu.kernels = {{"k0", "k0_entry", 3, {1}, 0}, {"k1", "k1_entry", 5, {1}, 0}};
  CodeObjectDesc gfx = cpu;
  gfx.target = "gfx942";
  gfx.format = "hsaco";
  gfx.bytes = std::string(1000, 'g');
  gfx.kernels[0].workgroupSize = {256, 1, 1};
  gfx.kernels[0].ldsBytes = 32768;
  writer.addCodeObject(cpu);
  writer.addCodeObject(gfx);

  ProgramDesc program;
  program.arenaSize = 1024;
  program.inputs = {{BindingDesc::Arena, 0, 48}};
  program.outputs = {{BindingDesc::Arena, 64, 14}, {BindingDesc::Constant, 0, 1}};
  program.dispatches.push_back(
      {1, {{BindingDesc::Arena, 0, 48}, {BindingDesc::Constant, 64, 400}},
       1234, 5678, "Conv_0,Relu_1"});
  program.dispatches.push_back({0, {}, 0, 0, ""});
  writer.addProgram(program);

  std::string bytes = writeBytes(writer);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(getLE64(bytes, 24), referenceChecksum(bytes));
  std::unique_ptr<rt::Artifact> a = openOk(bytes);
  ASSERT_TRUE(a);

  const Manifest &m = a->manifest();
  EXPECT_STREQ(m.producer()->c_str(), "kiln-compile 0.1");
  EXPECT_STREQ(m.options()->c_str(), "--target=cpu");
  EXPECT_STREQ(m.model()->c_str(), "model.onnx");
  ASSERT_EQ(a->inputs().size(), 1u);
  EXPECT_EQ(a->inputs()[0].name, "input");
  EXPECT_EQ(a->inputs()[0].dtype, KILN_DTYPE_I64);
  EXPECT_EQ(a->inputs()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->inputs()[0].byteSize, 48u);
  ASSERT_EQ(a->outputs().size(), 2u);
  EXPECT_EQ(a->outputs()[0].name, "out/logits:0");
  EXPECT_EQ(a->outputs()[0].byteSize, 14u);
  EXPECT_EQ(a->outputs()[1].shape.size(), 0u);
  EXPECT_EQ(a->outputs()[1].byteSize, 1u);

  // Sections: manifest, cpu, gfx942, constants; all 64-byte aligned.
  ASSERT_EQ(a->sections().size(), 4u);
  for (const rt::SectionEntry &s : a->sections())
    EXPECT_EQ(s.offset % 64, 0u);
  EXPECT_EQ(m.constants_section(), 3);
  EXPECT_EQ(a->constantsSize(), 64u + 448u + 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->constants()) % 64, 0u);
  EXPECT_EQ(std::memcmp(a->constants(), bias, 3), 0);
  EXPECT_EQ(std::memcmp(a->constants() + 64, weights.data(), 400), 0);
  EXPECT_EQ(a->constants()[512], 1);
  // Padding between constants is zero.
  for (int i = 3; i < 64; ++i)
    EXPECT_EQ(a->constants()[i], 0);

  ASSERT_EQ(a->findCodeObject("gfx942"), 1);
  const CodeObject *g = m.code_objects()->Get(1);
  EXPECT_STREQ(g->format()->c_str(), "hsaco");
  EXPECT_EQ(a->sections()[g->section()].size, 1000u);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(
                            a->sectionData(g->section())),
                        1000),
            gfx.bytes);
  EXPECT_EQ(g->kernels()->Get(0)->lds_bytes(), 32768u);
  EXPECT_EQ(g->kernels()->Get(0)->workgroup_size()->size(), 3u);
  const CodeObject *c = m.code_objects()->Get(0);
  EXPECT_STREQ(c->features()->c_str(), "+avx2,+fma");
  EXPECT_EQ(c->kernels()->Get(1)->workgroup_count(), 5u);
  EXPECT_EQ(a->findCodeObject("gfx1100"), -1);

  const Program *p = m.programs()->Get(0);
  EXPECT_STREQ(p->name()->c_str(), "main");
  EXPECT_EQ(p->arena_size(), 1024u);
  ASSERT_EQ(p->dispatches()->size(), 2u);
  const Dispatch *d = p->dispatches()->Get(0);
  EXPECT_EQ(d->kernel(), 1u);
  EXPECT_EQ(d->flops(), 1234u);
  EXPECT_EQ(d->bytes(), 5678u);
  EXPECT_STREQ(d->ops()->c_str(), "Conv_0,Relu_1");
  EXPECT_EQ(d->bindings()->Get(1)->kind(), BindingKind::Constant);
  EXPECT_EQ(d->bindings()->Get(1)->offset(), 64u);
  EXPECT_EQ(p->outputs()->Get(1)->kind(), BindingKind::Constant);
}

TEST(ArtifactWriter, NoConstantsSection) {
  std::string bytes = writeBytes(addModel());
  std::unique_ptr<rt::Artifact> a = openOk(bytes);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->manifest().constants_section(), -1);
  EXPECT_EQ(a->constants(), nullptr);
  EXPECT_EQ(a->constantsSize(), 0u);
  EXPECT_EQ(a->sections().size(), 2u);
  // The file ends with the last section.
  EXPECT_EQ(bytes.size(), a->sections()[1].offset + a->sections()[1].size);
}

TEST(ArtifactWriter, ChecksumStreamsInAnyPieces) {
  std::string data(1000, 0);
  std::mt19937 random(7);
  for (char &c : data)
    c = char(random());
  format::Checksum whole;
  whole.update(data.data(), data.size());
  for (int trial = 0; trial < 50; ++trial) {
    format::Checksum pieces;
    size_t at = 0;
    while (at < data.size()) {
      size_t n = std::min<size_t>(random() % 20, data.size() - at);
      pieces.update(data.data() + at, n);
      at += n;
    }
    EXPECT_EQ(pieces.finish(), whole.finish());
  }
}

TEST(ArtifactWriter, LargeConstantsStream) {
  // Bigger than the writer's buffer, with unaligned sizes in between.
  std::vector<unsigned char> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<unsigned char>(i * 7);
  ArtifactWriter writer = addModel();
  writer.addConstant(big.data(), 5);
  uint64_t offset = writer.addConstant(big.data(), big.size());
  writer.addConstant(big.data(), 3);
  std::string bytes = writeBytes(writer);
  EXPECT_EQ(getLE64(bytes, 24), referenceChecksum(bytes));
  std::unique_ptr<rt::Artifact> a = openOk(bytes);
  ASSERT_TRUE(a);
  EXPECT_EQ(std::memcmp(a->constants() + offset, big.data(), big.size()), 0);
}

TEST(ArtifactWriter, RefusesInvalidManifests) {
  struct Case {
    std::function<void(ProgramDesc &)> edit;
    const char *message;
  } cases[] = {
      {[](ProgramDesc &p) { p.dispatches[0].kernel = 3; },
       "dispatch 0: kernel index 3 is out of range (the code objects have 1 "
       "kernels)"},
      {[](ProgramDesc &p) { p.dispatches[0].bindings[2].offset = 300; },
       "dispatch 0 binding 2: arena range [300, 428) exceeds the arena (384 "
       "bytes)"},
      {[](ProgramDesc &p) {
         p.dispatches[0].bindings[0] = {BindingDesc::Constant, 0, 4};
       },
       "constant binding, but no constants were added"},
      {[](ProgramDesc &p) { p.inputs.pop_back(); },
       "1 input bindings for 2 model inputs"},
      {[](ProgramDesc &p) { p.outputs[0].size = 64; },
       "output 0 ('z'): binding size 64 does not match the tensor's 128 "
       "bytes"},
      {[](ProgramDesc &p) { p.inputs[1].kind = BindingDesc::Constant; },
       "input 1 ('y'): inputs must be bound in the arena"},
  };
  for (const Case &c : cases) {
    ArtifactWriter writer = addModel(c.edit);
    std::string path = tempPath("refused.kiln"), error;
    EXPECT_FALSE(writer.writeFile(path, error));
    EXPECT_THAT(error, HasSubstr(c.message));
    EXPECT_THAT(error, HasSubstr(path));
    EXPECT_FALSE(fileExists(path));
    EXPECT_FALSE(fileExists(path + ".tmp"));
  }
}

TEST(ArtifactWriter, UnwritablePathLeavesNothing) {
  std::string dir = tempPath("missing-dir");
  std::string error;
  EXPECT_FALSE(addModel().writeFile(dir + "/model.kiln", error));
  EXPECT_THAT(error, HasSubstr("cannot create"));
  EXPECT_FALSE(fileExists(dir));
}

TEST(ArtifactReader, OpensFromFileAndReportsMissingFiles) {
  std::string path = tempPath("ok.kiln"), error;
  ASSERT_TRUE(addModel().writeFile(path, error)) << error;
  Artifact artifact;
  Status status = Artifact::open(path, artifact);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(kiln_artifact_input_count(artifact.get()), 2u);
  EXPECT_EQ(kiln_artifact_arena_size(artifact.get(), 0), 384u);
  EXPECT_STREQ(kiln_artifact_program_name(artifact.get(), 0), "main");
  EXPECT_EQ(kiln_artifact_program_name(artifact.get(), 1), nullptr);
  EXPECT_STREQ(kiln_artifact_target(artifact.get(), 0), "cpu");

  Artifact missing;
  status = Artifact::open(path + ".nope", missing);
  EXPECT_EQ(status.code(), KILN_STATUS_IO_ERROR);
  EXPECT_THAT(status.message(), HasSubstr("cannot open: No such file"));
  status = Artifact::open(::testing::TempDir(), missing);
  EXPECT_EQ(status.code(), KILN_STATUS_IO_ERROR);
  EXPECT_THAT(status.message(), HasSubstr("not a regular file"));
  EXPECT_FALSE(missing);
}

//===----------------------------------------------------------------------===//
// Header, section table, checksum
//===----------------------------------------------------------------------===//

class ArtifactValidator : public ::testing::Test {
protected:
  void SetUp() override {
    bytes = writeBytes(addModel());
    ASSERT_EQ(openError(bytes), "");
  }
  std::string bytes;
};

TEST_F(ArtifactValidator, TooSmall) {
  EXPECT_EQ(openError(bytes.substr(0, 10)),
            "test.kiln: file is too small to be a kiln artifact (10 bytes; "
            "the header alone is 64)");
}

TEST_F(ArtifactValidator, Truncated) {
  std::string cut = bytes.substr(0, bytes.size() - 100);
  EXPECT_EQ(openError(cut),
            "test.kiln: the file is truncated: the header says " +
                std::to_string(bytes.size()) + " bytes, the file has " +
                std::to_string(cut.size()));
}

TEST_F(ArtifactValidator, Extended) {
  EXPECT_THAT(openError(bytes + "x"), HasSubstr("longer than recorded"));
}

TEST_F(ArtifactValidator, EveryTruncationFailsCleanly) {
  for (size_t n = 0; n < bytes.size(); n += (n < 4096 ? 1 : 997))
    EXPECT_NE(openError(bytes.substr(0, n)), "") << n;
}

TEST_F(ArtifactValidator, FlippedByteIsAChecksumError) {
  for (size_t at : {size_t(40), size_t(64 + 5), bytes.size() / 2,
                    bytes.size() - 1}) {
    std::string patched = bytes;
    patched[at] ^= 0x10;
    EXPECT_THAT(openError(patched), HasSubstr("checksum mismatch")) << at;
  }
}

TEST_F(ArtifactValidator, WrongMagic) {
  bytes[0] = 'X';
  EXPECT_EQ(openError(bytes), "test.kiln: not a kiln artifact (bad magic)");
}

TEST_F(ArtifactValidator, WrongVersion) {
  putLE32(bytes, 8, 2);
  EXPECT_EQ(openError(bytes), "test.kiln: unsupported format version 2 (this "
                              "runtime reads version 1)");
}

TEST_F(ArtifactValidator, HeaderSizeMismatch) {
  putLE32(bytes, 12, 64);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes), "test.kiln: header size 64 does not match 2 "
                              "sections (expected 128)");
}

TEST_F(ArtifactValidator, SectionTablePastTheEnd) {
  putLE32(bytes, 32, 100000000);
  putLE32(bytes, 12, uint32_t(64 + 32 * 100000000ull));
  fixChecksum(bytes);
  EXPECT_THAT(openError(bytes),
              HasSubstr("the section table (100000000 entries) extends past "
                        "the end of the file"));
}

TEST_F(ArtifactValidator, SectionOutOfRange) {
  putLE64(bytes, entryOffset(1), bytes.size() - 64 + 64 * 10);
  putLE64(bytes, entryOffset(1),
          (getLE64(bytes, entryOffset(1)) / 64) * 64); // keep it aligned
  fixChecksum(bytes);
  EXPECT_THAT(openError(bytes),
              HasSubstr("section 1 (code object): range ["));
  EXPECT_THAT(openError(bytes), HasSubstr("exceeds the file"));
}

TEST_F(ArtifactValidator, SectionSizeOverflows) {
  putLE64(bytes, entrySize(1), UINT64_MAX);
  fixChecksum(bytes);
  EXPECT_THAT(openError(bytes),
              HasSubstr("section 1 (code object): range offset "));
  EXPECT_THAT(openError(bytes), HasSubstr("(overflows) exceeds the file"));
}

TEST_F(ArtifactValidator, SectionMisaligned) {
  putLE64(bytes, entryOffset(1), getLE64(bytes, entryOffset(1)) + 8);
  fixChecksum(bytes);
  EXPECT_THAT(openError(bytes),
              HasSubstr("section 1 (code object): offset"));
  EXPECT_THAT(openError(bytes), HasSubstr("is not a multiple of 64"));
}

TEST_F(ArtifactValidator, SectionInsideHeader) {
  putLE64(bytes, entryOffset(0), 64);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes),
            "test.kiln: section 0 (manifest): offset 64 lies inside the "
            "header and section table (128 bytes)");
}

TEST_F(ArtifactValidator, SectionsOverlap) {
  putLE64(bytes, entryOffset(1), getLE64(bytes, entryOffset(0)));
  fixChecksum(bytes);
  EXPECT_THAT(openError(bytes), HasSubstr("sections 0 and 1 overlap"));
}

TEST_F(ArtifactValidator, UnknownSectionKind) {
  putLE32(bytes, entryKind(1), 9);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes), "test.kiln: section 1: unknown kind 9");
}

TEST_F(ArtifactValidator, NoManifest) {
  putLE32(bytes, entryKind(0), 3);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes),
            "test.kiln: 0 manifest sections (expected exactly one)");
}

TEST_F(ArtifactValidator, TwoManifests) {
  putLE32(bytes, entryKind(1), 1);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes),
            "test.kiln: 2 manifest sections (expected exactly one)");
}

TEST_F(ArtifactValidator, ReservedHeaderBytes) {
  bytes[40] = 1;
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes),
            "test.kiln: header byte 40 (reserved) is not zero");
}

TEST_F(ArtifactValidator, ManifestWithoutIdentifier) {
  size_t manifest = getLE64(bytes, entryOffset(0));
  bytes[manifest + 4] = 'X';
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes), "test.kiln: manifest (section 0): missing the "
                              "'KLNM' file identifier");
}

TEST_F(ArtifactValidator, ManifestGarbage) {
  size_t manifest = getLE64(bytes, entryOffset(0));
  putLE32(bytes, manifest, 0x7ffffff0); // root offset far outside
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes), "test.kiln: manifest (section 0): not a valid "
                              "FlatBuffers manifest (the verifier rejected "
                              "it)");
}

TEST_F(ArtifactValidator, AnyPatchedManifestByteFailsCleanlyOrLoads) {
  // With the checksum fixed, every single-byte change of the manifest must
  // either be rejected with a message or still describe a valid artifact.
  size_t manifest = getLE64(bytes, entryOffset(0));
  size_t size = getLE64(bytes, entrySize(0));
  for (size_t i = manifest; i < manifest + size; ++i) {
    for (unsigned char value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string patched = bytes;
      patched[i] = char(value);
      fixChecksum(patched);
      kiln_artifact_t *artifact = nullptr;
      Status status(kiln_artifact_open_memory(patched.data(), patched.size(),
                                              "fuzz.kiln", &artifact));
      if (status.ok())
        kiln_artifact_release(artifact);
      else
        EXPECT_THAT(status.message(), HasSubstr("fuzz.kiln: "));
    }
  }
}

TEST_F(ArtifactValidator, RandomMutationsFailCleanlyOrLoad) {
  // A small fuzzer: a few random bytes changed in the header, the section
  // table or the manifest, sometimes a truncation, mostly with the checksum
  // fixed so the later checks are reached. Run under ASan/UBSan this found
  // misaligned 8-byte vectors that the FlatBuffers verifier lets through.
  size_t manifest = getLE64(bytes, entryOffset(0));
  size_t size = getLE64(bytes, entrySize(0));
  std::mt19937_64 random(12345);
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string patched = bytes;
    for (int k = 1 + int(random() % 4); k > 0; --k) {
      size_t at = random() % 2 ? random() % 128 : manifest + random() % size;
      patched[at] = random() % 2 ? char(random()) : char(patched[at] ^ 0x04);
    }
    if (random() % 16 == 0)
      patched.resize(random() % patched.size());
    if (patched.size() >= 32 && random() % 4)
      fixChecksum(patched);
    kiln_artifact_t *artifact = nullptr;
    Status status(kiln_artifact_open_memory(patched.data(), patched.size(),
                                            "fuzz.kiln", &artifact));
    if (status.ok())
      kiln_artifact_release(artifact);
    else
      ASSERT_THAT(status.message(), HasSubstr("fuzz.kiln: "));
  }
}

//===----------------------------------------------------------------------===//
// Manifest contents (written with the writer's validation off)
//===----------------------------------------------------------------------===//

namespace {
std::string writeUnchecked(ArtifactWriter writer) {
  writer.setSkipValidationForTesting(true);
  return writeBytes(writer);
}
std::string errorFor(const std::function<void(ProgramDesc &)> &edit) {
  return openError(writeUnchecked(addModel(edit)));
}
} // namespace

TEST(ArtifactManifest, BindingOutOfRange) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) {
              p.dispatches[0].bindings[2].size = 1024;
            }),
            "test.kiln: dispatch 0 binding 2: arena range [256, 1280) exceeds "
            "the arena (384 bytes)");
}

TEST(ArtifactManifest, BindingRangeOverflows) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) {
              p.dispatches[0].bindings[1].offset = UINT64_MAX - 10;
            }),
            "test.kiln: dispatch 0 binding 1: arena range offset "
            "18446744073709551605 + size 128 (overflows) exceeds the arena "
            "(384 bytes)");
}

TEST(ArtifactManifest, ConstantBindingOutOfRange) {
  ArtifactWriter writer = addModel([](ProgramDesc &p) {
    p.dispatches[0].bindings.push_back({BindingDesc::Constant, 64, 8});
  });
  static const float one = 1;
  writer.addConstant(&one, 4);
  EXPECT_EQ(openError(writeUnchecked(writer)),
            "test.kiln: dispatch 0 binding 3: constant range [64, 72) exceeds "
            "the constants section (4 bytes)");
}

TEST(ArtifactManifest, ConstantBindingWithoutConstants) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) {
              p.dispatches[0].bindings.push_back({BindingDesc::Constant, 0, 4});
            }),
            "test.kiln: dispatch 0 binding 3: constant binding, but the "
            "artifact has no constants section");
}

/// addModel with z's extent along `axis` (an int64 constant) and `edit`.
static std::string extentError(int32_t axis, const std::function<void(ProgramDesc &)> &edit) {
  ArtifactWriter writer = addModel(edit, "add_f32", "cpu", axis);
  static const int64_t three = 3;
  writer.addConstant(&three, 8);
  std::string error;
  EXPECT_FALSE(writer.validate(error)); // the writer refuses it too
  return openError(writeUnchecked(writer));
}

TEST(ArtifactManifest, OutputExtents) {
  auto extent = [](uint64_t size) {
    return [size](ProgramDesc &p) { p.extents.push_back({0, {BindingDesc::Constant, 0, size}}); };
  };
  EXPECT_EQ(extentError(1, {}), "test.kiln: output 0 ('z'): an extent axis but no extent binding");
  EXPECT_EQ(extentError(1, extent(4)),
            "test.kiln: output 0 ('z'): extent binding of 4 bytes, not 8 (an int64)");
  EXPECT_EQ(extentError(2, extent(8)),
            "test.kiln: output 0 ('z'): extent axis 2 is out of range for rank 2");
  EXPECT_EQ(extentError(-1, extent(8)),
            "test.kiln: an extent binding for output 0, which has no extent axis "
            "(or is out of order)");
  EXPECT_EQ(extentError(0, [](ProgramDesc &p) {
              p.extents.push_back({0, {BindingDesc::Arena, 380, 8}});
            }),
            "test.kiln: output 0 ('z') extent: arena range [380, 388) exceeds the arena "
            "(384 bytes)");
}

/// addModel's program with `commands` (and two loop counters), written
/// unchecked; the error the reader gives, which the writer must give too.
static std::string commandError(std::vector<CommandDesc> commands) {
  ArtifactWriter writer = addModel([&](ProgramDesc &p) {
    p.commands = commands;
    p.counters = 2;
  });
  static const int64_t limit = 3;
  writer.addConstant(&limit, 8);
  std::string error;
  EXPECT_EQ(writer.validate(error), commands.empty()) << error;
  return openError(writeUnchecked(writer));
}

TEST(ArtifactManifest, Commands) {
  using Op = CommandOp;
  BindingDesc x{BindingDesc::Arena, 0, 128}, z{BindingDesc::Arena, 256, 128},
      flag{BindingDesc::Arena, 0, 1}, counter{BindingDesc::Arena, 0, 8},
      limit{BindingDesc::Constant, 0, 8};
  EXPECT_EQ(commandError({command(Op::Dispatch, 1)}),
            "test.kiln: command 0: dispatch 1 is out of range (1 dispatches)");
  EXPECT_EQ(commandError({command(Op::Jump, 2)}),
            "test.kiln: command 0: jumps to command 2, past the end (1 commands)");
  EXPECT_EQ(commandError({command(Op::CounterReset, 0, {}, {}, 2)}),
            "test.kiln: command 0: counter 2 is out of range (the program has 2)");
  EXPECT_EQ(commandError({command(Op::Copy, 0, x, {BindingDesc::Arena, 256, 64})}),
            "test.kiln: command 0: a destination of 64 bytes, not 128");
  EXPECT_EQ(commandError({command(Op::Copy, 0, limit, limit)}),
            "test.kiln: command 0: writes outside the arena");
  EXPECT_EQ(commandError({command(Op::Copy, 0, x, {BindingDesc::Arena, 320, 128})}),
            "test.kiln: command 0 destination: arena range [320, 448) exceeds the arena "
            "(384 bytes)");
  EXPECT_EQ(commandError({command(Op::CopyToRow, 0, {BindingDesc::Arena, 0, 48}, z)}),
            "test.kiln: command 0: a destination of 128 bytes is no whole number of 48-byte "
            "rows");
  EXPECT_EQ(commandError({command(Op::CopyFromRow, 0, z, {BindingDesc::Arena, 0, 48})}),
            "test.kiln: command 0: a source of 128 bytes is no whole number of 48-byte rows");
  EXPECT_EQ(commandError({command(Op::CopyFromRow, 0, z, limit)}),
            "test.kiln: command 0: writes outside the arena");
  EXPECT_EQ(commandError({command(Op::JumpIfFalse, 0, counter)}),
            "test.kiln: command 0: a condition of 8 bytes, not 1");
  EXPECT_EQ(commandError({command(Op::JumpIfCounterAtLeast, 0, flag)}),
            "test.kiln: command 0: a limit of 1 bytes, not 8");
  EXPECT_EQ(commandError({command(Op::CounterStore, 0, {}, flag)}),
            "test.kiln: command 0: a destination of 1 bytes, not 8");
  EXPECT_EQ(commandError({command(Op::CounterStore, 0, {}, limit)}),
            "test.kiln: command 0: writes outside the arena");
  EXPECT_EQ(commandError({command(Op(42), 0)}), "test.kiln: command 0: unknown command 42");
  // A whole loop is fine.
  ArtifactWriter writer = addModel([&](ProgramDesc &p) {
    p.counters = 1;
    p.commands = {command(Op::CounterReset, 0), command(Op::JumpIfCounterAtLeast, 5, limit),
                  command(Op::Dispatch, 0), command(Op::CounterIncrement, 0), command(Op::Jump, 1)};
  });
  static const int64_t three = 3;
  writer.addConstant(&three, 8);
  std::string error;
  EXPECT_TRUE(writer.validate(error)) << error;
  EXPECT_EQ(openError(writeBytes(writer)), "");
}

TEST(ArtifactManifest, KernelIndexOutOfRange) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) { p.dispatches[0].kernel = 7; }),
            "test.kiln: dispatch 0: kernel index 7 is out of range (the code "
            "objects have 1 kernels)");
}

TEST(ArtifactManifest, InputCountMismatch) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) { p.inputs.pop_back(); }),
            "test.kiln: 1 input bindings for 2 model inputs");
}

TEST(ArtifactManifest, InputSizeMismatch) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) { p.inputs[1].size = 100; }),
            "test.kiln: input 1 ('y'): binding size 100 does not match the "
            "tensor's 128 bytes (float32 [4, 8])");
}

TEST(ArtifactManifest, InputOutsideArena) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) {
              p.inputs[0] = {BindingDesc::Constant, 0, 128};
            }),
            "test.kiln: input 0 ('x'): inputs must be bound in the arena");
}

TEST(ArtifactManifest, OutputOutOfRange) {
  EXPECT_EQ(errorFor([](ProgramDesc &p) {
              p.arenaSize = 300;
              p.dispatches.clear();
            }),
            "test.kiln: output 0 ('z'): arena range [256, 384) exceeds the "
            "arena (300 bytes)");
}

TEST(ArtifactManifest, BadTensors) {
  auto error = [](TensorDesc input) {
    ArtifactWriter writer;
    writer.addInput(input);
    writer.addOutput({"z", DType::F32, {1}});
    ProgramDesc program;
    program.arenaSize = 64;
    program.inputs = {{BindingDesc::Arena, 0, 4}};
    program.outputs = {{BindingDesc::Arena, 0, 4}};
    writer.addProgram(program);
    return openError(writeUnchecked(writer));
  };
  EXPECT_EQ(error({"", DType::F32, {1}}), "test.kiln: input 0 has no name");
  EXPECT_EQ(error({"x", DType::F32, {2, -1}}),
            "test.kiln: input 0 ('x'): dimension 1 is -1 (shapes must be "
            "static)");
  EXPECT_EQ(error({"x", DType(42), {1}}),
            "test.kiln: input 0 ('x'): unknown dtype 42");
  EXPECT_EQ(error({"x", DType::F64, {int64_t(1) << 40, int64_t(1) << 30}}),
            "test.kiln: input 0 ('x'): the byte size overflows");
  EXPECT_EQ(error({"x", DType::F32, {1}}), "");
}

TEST(ArtifactManifest, DuplicateNamesAndMissingOutputs) {
  ArtifactWriter writer = addModel();
  writer.addInput({"x", DType::F32, {1}});
  EXPECT_EQ(openError(writeUnchecked(writer)),
            "test.kiln: input 2 ('x'): the name is used twice");

  ArtifactWriter noOutputs;
  ProgramDesc program;
  noOutputs.addProgram(program);
  EXPECT_EQ(openError(writeUnchecked(noOutputs)),
            "test.kiln: manifest: the model has no outputs");

  ArtifactWriter noPrograms;
  noPrograms.addOutput({"z", DType::F32, {1}});
  EXPECT_EQ(openError(writeUnchecked(noPrograms)),
            "test.kiln: manifest: no programs");
}

TEST(ArtifactManifest, CodeObjects) {
  ArtifactWriter mismatched = addModel();
  CodeObjectDesc gfx;
  gfx.target = "gfx942";
  gfx.bytes = "x";
  mismatched.addCodeObject(gfx);
  EXPECT_EQ(openError(writeUnchecked(mismatched)),
            "test.kiln: code object 1 ('gfx942') has 0 kernels but code "
            "object 0 ('cpu') has 1");

  ArtifactWriter duplicate = addModel();
  CodeObjectDesc cpu;
  cpu.target = "cpu";
  cpu.kernels = {{"k", "add_f32", 1, {1}, 0}};
  duplicate.addCodeObject(cpu);
  EXPECT_EQ(openError(writeUnchecked(duplicate)),
            "test.kiln: code object 1 ('cpu'): a second code object for the "
            "same target");

  ArtifactWriter noSymbol = addModel({}, "");
  EXPECT_EQ(openError(writeUnchecked(noSymbol)),
            "test.kiln: code object 0 ('cpu') kernel 0 ('dispatch_0_add'): "
            "no symbol");
}

TEST(ArtifactManifest, CodeObjectSectionKind) {
  // Point the code object at section 0 (the manifest) by patching the
  // section table instead: make section 1 a constants section.
  std::string bytes = writeBytes(addModel());
  putLE32(bytes, entryKind(1), 2);
  fixChecksum(bytes);
  EXPECT_EQ(openError(bytes), "test.kiln: code object 0 ('cpu'): section 1 "
                              "is a constants section");
}

//===----------------------------------------------------------------------===//
// Batch buckets: programs with their own shapes, constants stored once
//===----------------------------------------------------------------------===//

namespace {
/// The add model plus a program "batch_2" running it at [2, 8].
ArtifactWriter addBatchBuckets(const std::function<void(ProgramDesc &)> &edit = nullptr) {
  ArtifactWriter writer = addModel([](ProgramDesc &p) {
    p.name = "batch_4";
    p.batchSize = 4;
  });
  ProgramDesc two;
  two.name = "batch_2";
  two.batchSize = 2;
  two.arenaSize = 192;
  two.inputs = {{BindingDesc::Arena, 0, 64}, {BindingDesc::Arena, 64, 64}};
  two.outputs = {{BindingDesc::Arena, 128, 64}};
  two.inputTensors = {{"x", DType::F32, {2, 8}}, {"y", DType::F32, {2, 8}}};
  two.outputTensors = {{"z", DType::F32, {2, 8}}};
  DispatchDesc add;
  add.bindings = {two.inputs[0], two.inputs[1], two.outputs[0]};
  two.dispatches.push_back(add);
  if (edit)
    edit(two);
  writer.addProgram(two);
  return writer;
}
} // namespace

TEST(ArtifactWriter, StoresEqualConstantsOnce) {
  ArtifactWriter writer = addModel();
  std::vector<unsigned char> a(100, 7), b(100, 7), c(100, 7);
  c[99] = 8;
  uint64_t first = writer.addConstant(a.data(), a.size());
  uint64_t size = writer.constantsSize();
  EXPECT_EQ(writer.addConstant(b.data(), b.size()), first);
  EXPECT_EQ(writer.addConstantCopy(b.data(), b.size()), first);
  EXPECT_EQ(writer.constantsSize(), size);
  // One byte differs, or a prefix: stored apart.
  uint64_t other = writer.addConstant(c.data(), c.size());
  uint64_t prefix = writer.addConstant(a.data(), 99);
  EXPECT_NE(other, first);
  EXPECT_NE(prefix, first);
  EXPECT_NE(prefix, other);
  std::unique_ptr<rt::Artifact> artifact = openOk(writeBytes(writer));
  ASSERT_TRUE(artifact);
  EXPECT_EQ(artifact->constants()[first + 99], 7);
  EXPECT_EQ(artifact->constants()[other + 99], 8);
}

TEST(ArtifactManifest, BatchBuckets) {
  std::unique_ptr<rt::Artifact> a = openOk(writeBytes(addBatchBuckets()));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->programs().size(), 2u);
  EXPECT_EQ(a->programs()[0].batchSize, 4u);
  EXPECT_EQ(a->programs()[1].batchSize, 2u);
  EXPECT_EQ(a->programs()[0].inputs[0].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(a->programs()[1].inputs[1].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(a->programs()[1].outputs[0].byteSize, 64u);
  EXPECT_EQ(a->findBatchProgram(2), 1);
  EXPECT_EQ(a->findBatchProgram(4), 0);
  EXPECT_EQ(a->findBatchProgram(3), -1);
  // The model's tensors are program 0's.
  EXPECT_EQ(a->inputs()[0].shape, (std::vector<int64_t>{4, 8}));
}

TEST(ArtifactManifest, BatchBucketTensorsMustBeTheModels) {
  struct Case {
    std::function<void(ProgramDesc &)> edit;
    const char *message;
  } cases[] = {
      {[](ProgramDesc &p) { p.inputTensors[1].name = "w"; },
       "program 'batch_2' input 1 ('w'): not the model's input 'y' at another shape"},
      {[](ProgramDesc &p) { p.outputTensors[0].dtype = DType::F16; },
       "program 'batch_2' output 0 ('z'): not the model's output 'z' at another shape"},
      {[](ProgramDesc &p) { p.inputTensors[0].shape = {16}; },
       "program 'batch_2' input 0 ('x'): not the model's input 'x' at another shape"},
      {[](ProgramDesc &p) { p.inputTensors.pop_back(); },
       "program 'batch_2' has 1 inputs, the model 2"},
      // The bindings are checked against the program's own sizes.
      {[](ProgramDesc &p) { p.inputs[0].size = 128; },
       "program 'batch_2' input 0 ('x'): binding size 128 does not match the tensor's 64 bytes"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(addBatchBuckets(c.edit).validate(error));
    EXPECT_THAT(error, HasSubstr(c.message));
    EXPECT_THAT(openError(writeUnchecked(addBatchBuckets(c.edit))), HasSubstr(c.message));
  }
}
