//===- FuzzArtifact.cpp - Fuzz target for the artifact reader -------------===//
//
// kiln-fuzz-artifact: opens the input as a .kiln artifact through the C API,
// twice: from memory as it is, and from a file after recomputing the header
// checksum (so mutations reach the section table and manifest checks behind
// it). An artifact that opens is queried through every info call, and the
// values must be consistent (byte sizes match shapes and dtypes, indices out
// of range are errors), and the C++ reader behind the C API must accept it
// from memory as well. When its cpu code object is byte for byte the
// trusted test kernel library, a cpu session is created (loading the code
// object, resolving every kernel symbol, allocating the arena) and its
// dispatches are queried. Kernels never run: a mutated manifest may describe
// more work than the trusted kernels' fixed code does, which is not a runtime
// error the validator could see.
//
//===----------------------------------------------------------------------===//

#include "ArtifactFormat.h"
#include "kiln/artifact.hpp"
#include "kiln/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <unistd.h>

#ifndef KILN_TEST_KERNELS_PATH
#error "KILN_TEST_KERNELS_PATH must name the test kernel library"
#endif

namespace {

void fail(const char *what, const char *detail = "") {
  std::fprintf(stderr, "kiln-fuzz-artifact: %s%s%s\n", what,
               *detail ? ": " : "", detail);
  std::abort();
}

std::string gTrustedCode; // bytes of the test kernel library
std::string gFile;        // where the checksum-fixed copy is written
kiln_device_t *gDevice = nullptr;

/// An error status must carry one of the documented codes and a message;
/// frees it.
void checkError(kiln_status_t status, const char *call) {
  kiln_status_code_t code = kiln_status_code(status);
  if (code == KILN_STATUS_OK || code > KILN_STATUS_INTERNAL)
    fail("an error status with a bad code from", call);
  if (!*kiln_status_message(status))
    fail("an error status without a message from", call);
  if (code == KILN_STATUS_INTERNAL)
    fail("an internal error from", kiln_status_message(status));
  kiln_status_free(status);
}

void checkTensorInfo(const kiln_tensor_info_t &info) {
  if (!info.name || (info.rank && !info.shape))
    fail("tensor info with null pointers");
  uint64_t elements = 1;
  for (size_t d = 0; d < info.rank; ++d) {
    if (info.shape[d] < 0)
      fail("a tensor with a negative dimension", info.name);
    elements *= uint64_t(info.shape[d]);
  }
  if (kiln_dtype_size(info.dtype) == 0)
    fail("a tensor with an unknown dtype", info.name);
  if (info.byte_size != elements * kiln_dtype_size(info.dtype))
    fail("a tensor whose byte size does not match its shape", info.name);
}

/// True when the cpu code object of `bytes`, which the C API opened, is the
/// trusted library. The reader behind the C API must accept them too.
bool hasTrustedCpuCode(const std::string &bytes) {
  std::unique_ptr<kiln::rt::Artifact> opened;
  if (kiln_status_t status = kiln::rt::Artifact::openMemory(
          bytes.data(), bytes.size(), "fuzz.kiln", opened))
    fail("the reader refuses what the C API opened",
         kiln_status_message(status));
  const kiln::rt::Artifact &artifact = *opened;
  int index = artifact.findCodeObject("cpu");
  if (index < 0)
    return false;
  const auto *object = artifact.manifest().code_objects()->Get(index);
  uint32_t section = object->section();
  if (section >= artifact.sections().size())
    fail("a validated code object names a section out of range");
  const auto &entry = artifact.sections()[section];
  return entry.size == gTrustedCode.size() &&
         std::memcmp(artifact.sectionData(section), gTrustedCode.data(),
                     gTrustedCode.size()) == 0;
}

void querySession(kiln_artifact_t *artifact) {
  kiln_session_t *session = nullptr;
  kiln_status_t status =
      kiln_session_create(gDevice, artifact, nullptr, &session);
  if (status) {
    checkError(status, "kiln_session_create");
    return;
  }
  size_t dispatches = kiln_session_dispatch_count(session);
  for (size_t i = 0; i <= dispatches; ++i) {
    kiln_dispatch_info_t info;
    status = kiln_session_dispatch_info(session, i, &info);
    if (i == dispatches) {
      if (!status)
        fail("kiln_session_dispatch_info accepted an index out of range");
      checkError(status, "kiln_session_dispatch_info");
    } else if (status) {
      fail("kiln_session_dispatch_info failed", kiln_status_message(status));
    } else if (!info.name || !info.symbol || !info.ops) {
      fail("dispatch info with null strings");
    }
  }
  kiln_session_release(session);
}

void queryArtifact(kiln_artifact_t *artifact, const std::string &bytes) {
  // Strings must be readable.
  size_t length = std::strlen(kiln_artifact_name(artifact)) +
                  std::strlen(kiln_artifact_producer(artifact)) +
                  std::strlen(kiln_artifact_options(artifact)) +
                  std::strlen(kiln_artifact_model(artifact));
  (void)length;
  for (int outputs = 0; outputs < 2; ++outputs) {
    size_t count = outputs ? kiln_artifact_output_count(artifact)
                           : kiln_artifact_input_count(artifact);
    for (size_t i = 0; i <= count; ++i) {
      kiln_tensor_info_t info;
      kiln_status_t status =
          outputs ? kiln_artifact_output_info(artifact, i, &info)
                  : kiln_artifact_input_info(artifact, i, &info);
      if (i == count) {
        if (!status)
          fail("tensor info accepted an index out of range");
        checkError(status, "kiln_artifact_*_info");
      } else if (status) {
        fail("tensor info failed", kiln_status_message(status));
      } else {
        checkTensorInfo(info);
      }
    }
  }
  size_t targets = kiln_artifact_target_count(artifact);
  for (size_t i = 0; i < targets; ++i)
    if (!kiln_artifact_target(artifact, i))
      fail("a null target name in range");
  if (kiln_artifact_target(artifact, targets))
    fail("a target name out of range");
  size_t programs = kiln_artifact_program_count(artifact);
  for (size_t i = 0; i < programs; ++i) {
    if (!kiln_artifact_program_name(artifact, i))
      fail("a null program name in range");
    (void)kiln_artifact_arena_size(artifact, i);
    (void)kiln_artifact_dispatch_count(artifact, i);
  }
  if (kiln_artifact_program_name(artifact, programs) ||
      kiln_artifact_arena_size(artifact, programs) ||
      kiln_artifact_dispatch_count(artifact, programs))
    fail("a program query out of range answered");
  (void)kiln_artifact_constants_size(artifact);
  if (hasTrustedCpuCode(bytes))
    querySession(artifact);
}

void check(kiln_status_t status, kiln_artifact_t *artifact,
           const std::string &bytes, const char *call) {
  if (status) {
    checkError(status, call);
    return;
  }
  if (!artifact)
    fail("success without an artifact from", call);
  queryArtifact(artifact, bytes);
  kiln_artifact_release(artifact);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::ifstream in(KILN_TEST_KERNELS_PATH, std::ios::binary);
  if (!in)
    fail("cannot read the test kernel library " KILN_TEST_KERNELS_PATH);
  gTrustedCode.assign(std::istreambuf_iterator<char>(in),
                      std::istreambuf_iterator<char>());
  const char *tmp = std::getenv("TMPDIR");
  gFile = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-fuzz-artifact." +
          std::to_string(getpid()) + ".kiln";
  kiln_device_options_t options;
  kiln_device_options_init(&options);
  options.thread_count = 1;
  if (kiln_status_t status = kiln_device_create("cpu", &options, &gDevice))
    fail("cannot create the cpu device", kiln_status_message(status));
  std::atexit([] { std::remove(gFile.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  kiln_artifact_t *artifact = nullptr;
  check(kiln_artifact_open_memory(data, size, "fuzz.kiln", &artifact),
        artifact, bytes, "kiln_artifact_open_memory");

  // The same bytes with a correct checksum, through the file path.
  if (size < kiln::artifact::format::kHeaderSize)
    return 0;
  kiln::artifact::format::Checksum checksum;
  checksum.update(bytes.data(), 24);
  checksum.updateZeros(8);
  checksum.update(bytes.data() + 32, bytes.size() - 32);
  uint64_t sum = checksum.finish();
  for (int i = 0; i < 8; ++i)
    bytes[kiln::artifact::format::header::kChecksum + i] = char(sum >> (8 * i));
  {
    std::ofstream out(gFile, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out)
      fail("cannot write", gFile.c_str());
  }
  artifact = nullptr;
  check(kiln_artifact_open(gFile.c_str(), &artifact), artifact, bytes,
        "kiln_artifact_open");
  return 0;
}
