//===- TestArtifacts.h - Building artifacts for runtime tests ---*- C++ -*-===//
//
// Helpers shared by the unit tests: the bytes of the test kernel library,
// a writer preset for the `z = x + y` model, temporary files, and byte
// patching with the checksum recomputed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_TESTARTIFACTS_H
#define KILN_TEST_UNIT_TESTARTIFACTS_H

#include "artifact/ArtifactWriter.h"
#include "kiln/runtime.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::test {

/// The bytes of the test kernel shared library (TestKernels.c).
const std::string &testKernels();

/// A fresh path in the test's temporary directory.
std::string tempPath(const std::string &name);

std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &bytes);
bool fileExists(const std::string &path);

/// The model of kiln-test-artifact: inputs x, y float32 [4, 8], output z,
/// one dispatch of add_f32 with 2 workgroups; arena x@0, y@128, z@256.
/// `edit` may change the program before it is added. With `extentAxis`,
/// z's size along that axis is decided at run time (the program needs an
/// extent binding, which `edit` adds).
artifact::ArtifactWriter
addModel(const std::function<void(artifact::ProgramDesc &)> &edit = {},
         const std::string &symbol = "add_f32",
         const std::string &target = "cpu", int32_t extentAxis = -1);

/// One command of a program with control flow (kiln_artifact.fbs: Command).
artifact::CommandDesc command(artifact::CommandOp op, uint32_t index = 0,
                              artifact::BindingDesc src = {}, artifact::BindingDesc dst = {},
                              uint32_t counter = 0);

/// Stand-in bytes for a gfx code object: a valid AMDGPU ELF header (64-bit,
/// little-endian, ET_DYN, EM_AMDGPU, HSA OS ABI) followed by `note`. Enough
/// for the runtime's header check; only fake HIP tables "load" it.
std::string dummyHsaco(const std::string &note = "dummy gfx code object");

/// A gfx code object for addModel's kernel table: format "hsaco", triple
/// amdgcn-amd-amdhsa, cpu = `target`, dummyHsaco bytes, kernel
/// "dispatch_0_add" with `symbol`, 2 workgroups of `workgroupSize` threads.
artifact::CodeObjectDesc
gfxCodeObject(const std::string &target = "gfx942",
              const std::string &symbol = "add_f32_gfx",
              const std::vector<uint32_t> &workgroupSize = {64});

/// Writes `writer` to a temporary file and returns the bytes (the test fails
/// if writing fails).
std::string writeBytes(const artifact::ArtifactWriter &writer);

/// Recomputes the header checksum of artifact bytes after a patch.
void fixChecksum(std::string &bytes);

/// Little-endian field access into artifact bytes.
uint64_t getLE64(const std::string &bytes, size_t offset);
void putLE32(std::string &bytes, size_t offset, uint32_t value);
void putLE64(std::string &bytes, size_t offset, uint64_t value);

/// Opens artifact bytes from memory; returns "" on success, else the error
/// message (the status code must be invalid-artifact).
std::string openError(const std::string &bytes);

/// A float32 tensor [4, 8] with values start, start + step, ...
Tensor floatTensor(const std::string &name, float start, float step);

} // namespace kiln::test

#endif // KILN_TEST_UNIT_TESTARTIFACTS_H
