//===- TestArtifacts.cpp - Building artifacts for runtime tests -----------===//

#include "TestArtifacts.h"

#include "ArtifactFormat.h"

#include <atomic>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::artifact;

const std::string &test::testKernels() {
  static const std::string bytes = readFile(KILN_TEST_KERNELS_PATH);
  return bytes;
}

std::string test::tempPath(const std::string &name) {
  static std::atomic<unsigned> counter{0};
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info ? std::string(info->test_suite_name()) + "." +
                                info->name()
                          : "global";
  return ::testing::TempDir() + "kiln-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++) + "-" + test + "-" + name;
}

std::string test::readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void test::writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

bool test::fileExists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

ArtifactWriter
test::addModel(const std::function<void(artifact::ProgramDesc &)> &edit,
               const std::string &symbol, const std::string &target,
               int32_t extentAxis) {
  ArtifactWriter writer;
  writer.setProducer("kiln unit tests");
  writer.setOptions("--test");
  writer.setModel("add.onnx");
  writer.addInput({"x", DType::F32, {4, 8}});
  writer.addInput({"y", DType::F32, {4, 8}});
  writer.addOutput({"z", DType::F32, {4, 8}, extentAxis});
  CodeObjectDesc code;
  code.target = target;
  code.triple = "x86_64-unknown-linux-gnu";
  code.cpu = "x86-64";
  code.format = "elf-shared-object";
  code.bytes = testKernels();
  code.kernels.push_back({"dispatch_0_add", symbol, 2, {1}, 0});
  writer.addCodeObject(code);
  ProgramDesc program;
  program.arenaSize = 384;
  program.inputs = {{BindingDesc::Arena, 0, 128},
                    {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 256, 128}};
  DispatchDesc add;
  add.bindings = {{BindingDesc::Arena, 0, 128},
                  {BindingDesc::Arena, 128, 128},
                  {BindingDesc::Arena, 256, 128}};
  add.flops = 32;
  add.bytes = 384;
  add.ops = "Add_0";
  program.dispatches.push_back(add);
  if (edit)
    edit(program);
  writer.addProgram(program);
  return writer;
}

std::string test::dummyHsaco(const std::string &note) {
  std::string bytes(64, '\0');
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F',
                                 2,  // ELFCLASS64
                                 1,  // ELFDATA2LSB
                                 1,  // EV_CURRENT
                                 64, // ELFOSABI_AMDGPU_HSA
                                 3}; // ABI version of code object v5
  std::memcpy(&bytes[0], ident, sizeof(ident));
  bytes[16] = 3;          // e_type ET_DYN
  bytes[18] = char(0xe0); // e_machine EM_AMDGPU (224)
  bytes[20] = 1;          // e_version
  bytes[52] = 64;         // e_ehsize
  return bytes + note;
}

CodeObjectDesc test::gfxCodeObject(const std::string &target,
                                   const std::string &symbol,
                                   const std::vector<uint32_t> &workgroupSize) {
  CodeObjectDesc code;
  code.target = target;
  code.triple = "amdgcn-amd-amdhsa";
  code.cpu = target;
  code.format = "hsaco";
  code.bytes = dummyHsaco(target + " code object");
  code.kernels.push_back({"dispatch_0_add", symbol, 2, workgroupSize, 0});
  return code;
}

std::string test::writeBytes(const ArtifactWriter &writer) {
  std::string path = tempPath("artifact.kiln");
  std::string error;
  EXPECT_TRUE(writer.writeFile(path, error)) << error;
  std::string bytes = readFile(path);
  unlink(path.c_str());
  return bytes;
}

void test::fixChecksum(std::string &bytes) {
  format::Checksum checksum;
  checksum.update(bytes.data(), 24);
  checksum.updateZeros(8);
  checksum.update(bytes.data() + 32, bytes.size() - 32);
  putLE64(bytes, 24, checksum.finish());
}

uint64_t test::getLE64(const std::string &bytes, size_t offset) {
  return format::loadLE64(
      reinterpret_cast<const unsigned char *>(bytes.data()) + offset);
}

void test::putLE32(std::string &bytes, size_t offset, uint32_t value) {
  format::storeLE32(reinterpret_cast<unsigned char *>(&bytes[offset]), value);
}

void test::putLE64(std::string &bytes, size_t offset, uint64_t value) {
  format::storeLE64(reinterpret_cast<unsigned char *>(&bytes[offset]), value);
}

std::string test::openError(const std::string &bytes) {
  kiln_artifact_t *artifact = nullptr;
  Status status(kiln_artifact_open_memory(bytes.data(), bytes.size(),
                                          "test.kiln", &artifact));
  if (status.ok()) {
    kiln_artifact_release(artifact);
    return "";
  }
  EXPECT_EQ(status.code(), KILN_STATUS_INVALID_ARTIFACT) << status.message();
  return status.message();
}

Tensor test::floatTensor(const std::string &name, float start, float step) {
  Tensor t;
  t.name = name;
  t.dtype = KILN_DTYPE_F32;
  t.shape = {4, 8};
  t.data.resize(32 * sizeof(float));
  for (int i = 0; i < 32; ++i) {
    float v = start + step * float(i);
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  }
  return t;
}

CommandDesc test::command(CommandOp op, uint32_t index, BindingDesc src, BindingDesc dst,
                          uint32_t counter) {
  CommandDesc c;
  c.op = op;
  c.index = index;
  c.src = src;
  c.dst = dst;
  c.counter = counter;
  return c;
}
