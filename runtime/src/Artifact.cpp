//===- Artifact.cpp - .kiln reader and validator --------------------------===//
//
// Validation runs in file order: header, section table, checksum, manifest
// (FlatBuffers verifier first, then the meaning of every field). Each check
// names what failed and where; arithmetic on untrusted offsets and sizes is
// written so it cannot overflow.
//
//===----------------------------------------------------------------------===//

#include "kiln/artifact.hpp"

#include "ArtifactFormat.h"
#include "Status.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln::rt;
namespace fb = kiln::artifact;
namespace format = kiln::artifact::format;
using ull = unsigned long long;

static_assert(int(KILN_DTYPE_F32) == int(fb::DType::F32) &&
                  int(KILN_DTYPE_F16) == int(fb::DType::F16) &&
                  int(KILN_DTYPE_BF16) == int(fb::DType::BF16) &&
                  int(KILN_DTYPE_F64) == int(fb::DType::F64) &&
                  int(KILN_DTYPE_I8) == int(fb::DType::I8) &&
                  int(KILN_DTYPE_I16) == int(fb::DType::I16) &&
                  int(KILN_DTYPE_I32) == int(fb::DType::I32) &&
                  int(KILN_DTYPE_I64) == int(fb::DType::I64) &&
                  int(KILN_DTYPE_U8) == int(fb::DType::U8) &&
                  int(KILN_DTYPE_BOOL) == int(fb::DType::Bool) &&
                  int(KILN_DTYPE_U16) == int(fb::DType::U16) &&
                  int(KILN_DTYPE_U32) == int(fb::DType::U32) &&
                  int(KILN_DTYPE_U64) == int(fb::DType::U64),
              "kiln_dtype_t must mirror the schema's DType");

Artifact::~Artifact() {
  if (mapping_)
    munmap(mapping_, mappingSize_);
  std::free(heap_);
}

kiln_status_t Artifact::invalid(const std::string &message) const {
  return makeStatus(KILN_STATUS_INVALID_ARTIFACT, name_ + ": " + message);
}

kiln_status_t Artifact::open(const std::string &path,
                             std::unique_ptr<Artifact> &out) {
  auto ioError = [&](const char *what) {
    return makeStatus(KILN_STATUS_IO_ERROR,
                      path + ": " + what + ": " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioError("cannot open");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    kiln_status_t status = ioError("cannot stat");
    ::close(fd);
    return status;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeStatus(KILN_STATUS_IO_ERROR, path + ": not a regular file");
  }
  std::unique_ptr<Artifact> artifact(new Artifact());
  artifact->name_ = path;
  uint64_t size = uint64_t(st.st_size);
  if (size < format::kHeaderSize) {
    ::close(fd);
    return artifact->invalid(strFormat(
        "file is too small to be a kiln artifact (%llu bytes; the header "
        "alone is %llu)",
        ull(size), ull(format::kHeaderSize)));
  }
  void *mapping = mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) {
    kiln_status_t status = ioError("cannot map");
    ::close(fd);
    return status;
  }
  ::close(fd);
  artifact->mapping_ = mapping;
  artifact->mappingSize_ = size_t(size);
  artifact->data_ = static_cast<const unsigned char *>(mapping);
  artifact->size_ = size;
  KILN_RETURN_IF_ERROR(artifact->validate());
  out = std::move(artifact);
  return nullptr;
}

kiln_status_t Artifact::openMemory(const void *data, size_t size,
                                   const std::string &name,
                                   std::unique_ptr<Artifact> &out) {
  std::unique_ptr<Artifact> artifact(new Artifact());
  artifact->name_ = name;
  if (size < format::kHeaderSize)
    return artifact->invalid(strFormat(
        "file is too small to be a kiln artifact (%llu bytes; the header "
        "alone is %llu)",
        ull(size), ull(format::kHeaderSize)));
  if (!data)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      name + ": data is NULL");
  size_t rounded = size_t(format::alignUp(size));
  if (rounded < size)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, name + ": too large");
  void *heap = std::aligned_alloc(format::kSectionAlignment, rounded);
  if (!heap)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      strFormat("%s: cannot allocate %llu bytes",
                                name.c_str(), ull(size)));
  std::memcpy(heap, data, size);
  artifact->heap_ = heap;
  artifact->data_ = static_cast<const unsigned char *>(heap);
  artifact->size_ = size;
  KILN_RETURN_IF_ERROR(artifact->validate());
  out = std::move(artifact);
  return nullptr;
}

kiln_status_t Artifact::validate() {
  KILN_RETURN_IF_ERROR(validateHeader());
  KILN_RETURN_IF_ERROR(validateManifest());
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Header, section table, checksum
//===----------------------------------------------------------------------===//

/// "[a, b)" for a range, or "offset a + size b (overflows)".
static std::string rangeString(uint64_t offset, uint64_t size) {
  if (size > UINT64_MAX - offset)
    return strFormat("offset %llu + size %llu (overflows)", ull(offset),
                     ull(size));
  return strFormat("[%llu, %llu)", ull(offset), ull(offset + size));
}

/// FlatBuffers 2.0's verifier checks the alignment of a vector's length
/// but not of its elements; vectors of 8-byte scalars and structs must be
/// 8-byte aligned to be read without undefined behavior (empty ones may not
/// be). The manifest section is 64-byte aligned in memory, so addresses tell.
template <typename Vector> static bool elementsAligned(const Vector *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->data()) % 8 == 0;
}

/// True when [offset, offset + size) lies within [0, limit).
static bool inBounds(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

kiln_status_t Artifact::validateHeader() {
  namespace h = format::header;
  const unsigned char *d = data_;
  if (std::memcmp(d + h::kMagic, format::kMagic, sizeof(format::kMagic)) != 0)
    return invalid("not a kiln artifact (bad magic)");
  uint32_t version = format::loadLE32(d + h::kVersion);
  if (version != format::kVersion)
    return invalid(strFormat("unsupported format version %u (this runtime "
                             "reads version %u)",
                             version, format::kVersion));
  uint64_t fileSize = format::loadLE64(d + h::kFileSize);
  if (fileSize != size_)
    return invalid(strFormat(
        "the file is %s: the header says %llu bytes, the file has %llu",
        size_ < fileSize ? "truncated" : "longer than recorded",
        ull(fileSize), ull(size_)));
  // Magic, version and size say whether this is a file we can read at all.
  // The checksum then covers everything, so a flipped byte anywhere else is
  // reported as corruption rather than as whatever field it happened to hit.
  format::Checksum checksum;
  checksum.update(d, h::kChecksum);
  checksum.updateZeros(8);
  checksum.update(d + h::kChecksum + 8, size_t(size_ - (h::kChecksum + 8)));
  uint64_t stored = format::loadLE64(d + h::kChecksum);
  uint64_t computed = checksum.finish();
  if (stored != computed)
    return invalid(strFormat("checksum mismatch (header %016llx, computed "
                             "%016llx): the file is corrupted",
                             ull(stored), ull(computed)));
  for (size_t i = h::kReserved; i < format::kHeaderSize; ++i)
    if (d[i] != 0)
      return invalid(strFormat("header byte %zu (reserved) is not zero", i));
  uint32_t count = format::loadLE32(d + h::kSectionCount);
  uint32_t headerSize = format::loadLE32(d + h::kHeaderSize);
  uint64_t expectedHeaderSize =
      format::kHeaderSize + format::kSectionEntrySize * uint64_t(count);
  if (headerSize != expectedHeaderSize)
    return invalid(strFormat("header size %u does not match %u sections "
                             "(expected %llu)",
                             headerSize, count, ull(expectedHeaderSize)));
  if (expectedHeaderSize > size_)
    return invalid(strFormat("the section table (%u entries) extends past "
                             "the end of the file (%llu bytes)",
                             count, ull(size_)));

  sections_.resize(count);
  uint32_t manifests = 0;
  for (uint32_t i = 0; i < count; ++i) {
    namespace e = format::entry;
    const unsigned char *p =
        d + format::kHeaderSize + format::kSectionEntrySize * i;
    SectionEntry &s = sections_[i];
    s.kind = format::loadLE32(p + e::kKind);
    s.offset = format::loadLE64(p + e::kOffset);
    s.size = format::loadLE64(p + e::kSize);
    uint32_t flags = format::loadLE32(p + e::kFlags);
    uint64_t reserved = format::loadLE64(p + e::kReserved);
    const char *kindName = format::sectionKindName(s.kind);
    if (s.kind < uint32_t(format::SectionKind::Manifest) ||
        s.kind > uint32_t(format::SectionKind::CodeObject))
      return invalid(strFormat("section %u: unknown kind %u", i, s.kind));
    if (flags != 0 || reserved != 0)
      return invalid(strFormat("section %u (%s): flags and reserved fields "
                               "must be zero",
                               i, kindName));
    if (s.offset % format::kSectionAlignment != 0)
      return invalid(strFormat("section %u (%s): offset %llu is not a "
                               "multiple of %llu",
                               i, kindName, ull(s.offset),
                               ull(format::kSectionAlignment)));
    if (s.offset < expectedHeaderSize)
      return invalid(strFormat("section %u (%s): offset %llu lies inside the "
                               "header and section table (%llu bytes)",
                               i, kindName, ull(s.offset),
                               ull(expectedHeaderSize)));
    if (!inBounds(s.offset, s.size, size_))
      return invalid(strFormat("section %u (%s): range %s exceeds the file "
                               "(%llu bytes)",
                               i, kindName,
                               rangeString(s.offset, s.size).c_str(),
                               ull(size_)));
    if (s.kind == uint32_t(format::SectionKind::Manifest)) {
      ++manifests;
      manifestSection_ = i;
    }
  }
  if (manifests != 1)
    return invalid(strFormat("%u manifest sections (expected exactly one)",
                             manifests));

  std::vector<uint32_t> order(count);
  for (uint32_t i = 0; i < count; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return sections_[a].offset < sections_[b].offset;
  });
  const SectionEntry *previous = nullptr;
  uint32_t previousIndex = 0;
  for (uint32_t i : order) {
    const SectionEntry &s = sections_[i];
    if (s.size == 0)
      continue;
    if (previous && previous->offset + previous->size > s.offset)
      return invalid(strFormat("sections %u and %u overlap (%s and %s)",
                               std::min(previousIndex, i),
                               std::max(previousIndex, i),
                               rangeString(previous->offset, previous->size)
                                   .c_str(),
                               rangeString(s.offset, s.size).c_str()));
    previous = &s;
    previousIndex = i;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

kiln_status_t Artifact::validateManifest() {
  const SectionEntry &section = sections_[manifestSection_];
  const unsigned char *buffer = data_ + section.offset;
  std::string where = strFormat("manifest (section %u)", manifestSection_);
  if (section.size < 8 || section.size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalid(strFormat("%s: size %llu is out of range", where.c_str(),
                             ull(section.size)));
  if (!flatbuffers::BufferHasIdentifier(buffer, format::kManifestIdentifier))
    return invalid(where + ": missing the '" + format::kManifestIdentifier +
                   "' file identifier");
  flatbuffers::Verifier verifier(buffer, size_t(section.size));
  if (!fb::VerifyManifestBuffer(verifier))
    return invalid(where + ": not a valid FlatBuffers manifest (the verifier "
                           "rejected it)");
  manifest_ = fb::GetManifest(buffer);

  int32_t constants = manifest_->constants_section();
  if (constants != -1) {
    if (constants < 0 || uint32_t(constants) >= sections_.size())
      return invalid(strFormat("manifest: constants_section %d is out of "
                               "range (%zu sections)",
                               constants, sections_.size()));
    if (sections_[constants].kind != uint32_t(format::SectionKind::Constants))
      return invalid(strFormat(
          "manifest: constants_section %d is a %s section", constants,
          format::sectionKindName(sections_[constants].kind)));
    constantsSection_ = constants;
  }

  KILN_RETURN_IF_ERROR(validateTensors(false));
  KILN_RETURN_IF_ERROR(validateTensors(true));
  if (auto *pinned = manifest_->pinned_inputs()) {
    for (size_t i = 0; i < pinned->size(); ++i) {
      const fb::PinnedInput *entry = pinned->Get(i);
      std::string name = str(entry->name());
      // (An empty value is an empty tensor's.)
      if (name.empty() || !entry->value())
        return invalid(strFormat("pinned input %zu: no name or no value", i));
      for (const TensorInfo &input : inputs_)
        if (input.name == name)
          return invalid(strFormat("pinned input '%s' is also a model input", name.c_str()));
      pinned_.emplace_back(std::move(name), str(entry->value()));
    }
  }
  size_t kernelCount = 0;
  KILN_RETURN_IF_ERROR(validateCodeObjects(kernelCount));
  auto *programs = manifest_->programs();
  if (!programs || programs->size() == 0)
    return invalid("manifest: no programs");
  std::set<std::string> names;
  for (size_t i = 0; i < programs->size(); ++i) {
    const char *name = str(programs->Get(i)->name());
    if (!names.insert(name).second)
      return invalid(strFormat("program %zu: name '%s' is used twice", i,
                               name));
    KILN_RETURN_IF_ERROR(validateProgram(i, kernelCount));
  }
  return nullptr;
}

kiln_status_t Artifact::validateTensors(bool outputs) {
  auto *infos = outputs ? manifest_->outputs() : manifest_->inputs();
  if (outputs && (!infos || infos->size() == 0))
    return invalid("manifest: the model has no outputs");
  return readTensors(infos, outputs, "", outputs ? outputs_ : inputs_);
}

kiln_status_t Artifact::readTensors(
    const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *infos, bool outputs,
    const std::string &prefix, std::vector<TensorInfo> &result) {
  const char *what = outputs ? "output" : "input";
  size_t count = infos ? infos->size() : 0;
  // A program's own tensors are the model's at other shapes.
  const std::vector<TensorInfo> *model = prefix.empty() ? nullptr : outputs ? &outputs_ : &inputs_;
  if (model && count != model->size())
    return invalid(strFormat("%shas %zu %ss, the model %zu", prefix.c_str(), count, what,
                             model->size()));
  std::set<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    const fb::TensorInfo *info = infos->Get(i);
    TensorInfo t;
    t.name = str(info->name());
    if (t.name.empty())
      return invalid(strFormat("%s%s %zu has no name", prefix.c_str(), what, i));
    std::string item = strFormat("%s%s %zu ('%s')", prefix.c_str(), what, i, t.name.c_str());
    if (!names.insert(t.name).second)
      return invalid(item + ": the name is used twice");
    if (!elementsAligned(info->shape()))
      return invalid(item + ": the shape vector is misaligned in the "
                            "manifest");
    auto dtype = uint8_t(info->dtype());
    if (dtype > uint8_t(fb::DType::MAX))
      return invalid(strFormat("%s: unknown dtype %u", item.c_str(), dtype));
    t.dtype = kiln_dtype_t(dtype);
    uint64_t bytes = kiln_dtype_size(t.dtype);
    if (auto *shape = info->shape()) {
      for (size_t d = 0; d < shape->size(); ++d) {
        int64_t dim = shape->Get(d);
        if (dim < 0)
          return invalid(strFormat("%s: dimension %zu is %lld (shapes must "
                                   "be static)",
                                   item.c_str(), d, (long long)dim));
        if (dim != 0 && bytes > UINT64_MAX / uint64_t(dim))
          return invalid(item + ": the byte size overflows");
        bytes *= uint64_t(dim);
        t.shape.push_back(dim);
      }
    }
    t.byteSize = bytes;
    int32_t axis = info->extent_axis();
    if (axis != -1 && (!outputs || axis < 0 || size_t(axis) >= t.shape.size()))
      return invalid(outputs ? strFormat("%s: extent axis %d is out of range "
                                         "for rank %zu",
                                         item.c_str(), axis, t.shape.size())
                             : item + ": an input cannot have an extent axis");
    t.extentAxis = axis;
    if (model) {
      const TensorInfo &m = (*model)[i];
      if (t.name != m.name || t.dtype != m.dtype || t.shape.size() != m.shape.size() ||
          t.extentAxis != m.extentAxis)
        return invalid(strFormat("%s: not the model's %s '%s' at another shape", item.c_str(),
                                 what, m.name.c_str()));
    }
    result.push_back(std::move(t));
  }
  return nullptr;
}

kiln_status_t Artifact::validateCodeObjects(size_t &kernelCount) {
  auto *objects = manifest_->code_objects();
  size_t count = objects ? objects->size() : 0;
  std::set<std::string> targets;
  for (size_t i = 0; i < count; ++i) {
    const fb::CodeObject *object = objects->Get(i);
    std::string target = str(object->target());
    if (target.empty())
      return invalid(strFormat("code object %zu has no target", i));
    std::string item = strFormat("code object %zu ('%s')", i, target.c_str());
    if (!targets.insert(target).second)
      return invalid(item + ": a second code object for the same target");
    uint32_t section = object->section();
    if (section >= sections_.size())
      return invalid(strFormat("%s: section %u is out of range (%zu "
                               "sections)",
                               item.c_str(), section, sections_.size()));
    if (sections_[section].kind != uint32_t(format::SectionKind::CodeObject))
      return invalid(strFormat("%s: section %u is a %s section",
                               item.c_str(), section,
                               format::sectionKindName(
                                   sections_[section].kind)));
    auto *kernels = object->kernels();
    size_t kernels0 = kernels ? kernels->size() : 0;
    if (i == 0) {
      kernelCount = kernels0;
    } else if (kernels0 != kernelCount) {
      return invalid(strFormat("%s has %zu kernels but code object 0 ('%s') "
                               "has %zu",
                               item.c_str(), kernels0,
                               str(objects->Get(0)->target()), kernelCount));
    }
    for (size_t k = 0; k < kernels0; ++k) {
      const fb::Kernel *kernel = kernels->Get(k);
      if (!kernel->symbol() || kernel->symbol()->size() == 0)
        return invalid(strFormat("%s kernel %zu ('%s'): no symbol",
                                 item.c_str(), k, str(kernel->name())));
      if (kernel->workgroup_count() > uint64_t(INT64_MAX))
        return invalid(strFormat("%s kernel %zu ('%s'): workgroup count %llu "
                                 "is too large",
                                 item.c_str(), k, str(kernel->name()),
                                 ull(kernel->workgroup_count())));
    }
  }
  return nullptr;
}

kiln_status_t Artifact::validateProgram(size_t index, size_t kernelCount) {
  const fb::Program *program = manifest_->programs()->Get(index);
  // With a single program its name adds nothing to messages.
  std::string prefix =
      manifest_->programs()->size() == 1
          ? std::string()
          : strFormat("program '%s' ", str(program->name()));
  uint64_t arenaSize = program->arena_size();
  uint64_t constantsSize = this->constantsSize();
  ProgramInterface interface;
  interface.batchSize = program->batch_size();
  if (program->input_tensors() || program->output_tensors()) {
    std::string own = prefix.empty() ? strFormat("program '%s' ", str(program->name())) : prefix;
    KILN_RETURN_IF_ERROR(readTensors(program->input_tensors(), false, own, interface.inputs));
    KILN_RETURN_IF_ERROR(readTensors(program->output_tensors(), true, own, interface.outputs));
  } else {
    interface.inputs = inputs_;
    interface.outputs = outputs_;
  }

  auto checkBinding = [&](const fb::Binding *binding,
                          const std::string &item) -> kiln_status_t {
    uint64_t offset = binding->offset(), size = binding->size();
    switch (binding->kind()) {
    case fb::BindingKind::Arena:
      if (!inBounds(offset, size, arenaSize))
        return invalid(strFormat("%s: arena range %s exceeds the arena "
                                 "(%llu bytes)",
                                 item.c_str(),
                                 rangeString(offset, size).c_str(),
                                 ull(arenaSize)));
      return nullptr;
    case fb::BindingKind::Constant:
      if (constantsSection_ < 0)
        return invalid(item + ": constant binding, but the artifact has no "
                              "constants section");
      if (!inBounds(offset, size, constantsSize))
        return invalid(strFormat("%s: constant range %s exceeds the "
                                 "constants section (%llu bytes)",
                                 item.c_str(),
                                 rangeString(offset, size).c_str(),
                                 ull(constantsSize)));
      return nullptr;
    }
    return invalid(strFormat("%s: unknown binding kind %u", item.c_str(),
                             unsigned(binding->kind())));
  };

  auto checkInterface = [&](bool outputs) -> kiln_status_t {
    const char *what = outputs ? "output" : "input";
    auto *bindings = outputs ? program->outputs() : program->inputs();
    const std::vector<TensorInfo> &tensors = outputs ? interface.outputs : interface.inputs;
    size_t count = bindings ? bindings->size() : 0;
    if (!elementsAligned(bindings))
      return invalid(strFormat("%s%s bindings are misaligned in the manifest",
                               prefix.c_str(), what));
    if (count != tensors.size())
      return invalid(strFormat("%s%zu %s bindings for %zu model %ss",
                               prefix.c_str(), count, what, tensors.size(),
                               what));
    for (size_t i = 0; i < count; ++i) {
      const fb::Binding *binding = bindings->Get(i);
      const TensorInfo &t = tensors[i];
      std::string item = strFormat("%s%s %zu ('%s')", prefix.c_str(), what, i,
                                   t.name.c_str());
      if (!outputs && binding->kind() != fb::BindingKind::Arena)
        return invalid(item + ": inputs must be bound in the arena");
      KILN_RETURN_IF_ERROR(checkBinding(binding, item));
      if (binding->size() != t.byteSize)
        return invalid(strFormat(
            "%s: binding size %llu does not match the tensor's %llu bytes "
            "(%s %s)",
            item.c_str(), ull(binding->size()), ull(t.byteSize),
            kiln_dtype_name(t.dtype),
            shapeString(t.shape.data(), t.shape.size()).c_str()));
    }
    return nullptr;
  };
  KILN_RETURN_IF_ERROR(checkInterface(false));
  KILN_RETURN_IF_ERROR(checkInterface(true));

  // One extent per output with an extent axis, in output order.
  auto *extents = program->extents();
  size_t extentCount = extents ? extents->size() : 0, next = 0;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].extentAxis < 0)
      continue;
    std::string item = strFormat("%soutput %zu ('%s')", prefix.c_str(), i,
                                 outputs_[i].name.c_str());
    if (next >= extentCount || extents->Get(next)->output() != i ||
        !extents->Get(next)->extent())
      return invalid(item + ": an extent axis but no extent binding");
    const fb::Binding *binding = extents->Get(next++)->extent();
    KILN_RETURN_IF_ERROR(checkBinding(binding, item + " extent"));
    if (binding->size() != 8)
      return invalid(strFormat("%s: extent binding of %llu bytes, not 8 (an "
                               "int64)",
                               item.c_str(), ull(binding->size())));
  }
  if (next != extentCount)
    return invalid(strFormat("%san extent binding for output %u, which has "
                             "no extent axis (or is out of order)",
                             prefix.c_str(), extents->Get(next)->output()));

  auto *dispatches = program->dispatches();
  size_t count = dispatches ? dispatches->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    const fb::Dispatch *dispatch = dispatches->Get(i);
    std::string item = strFormat("%sdispatch %zu", prefix.c_str(), i);
    if (dispatch->kernel() >= kernelCount)
      return invalid(strFormat("%s: kernel index %u is out of range (the "
                               "code objects have %zu kernels)",
                               item.c_str(), dispatch->kernel(),
                               kernelCount));
    if (!elementsAligned(dispatch->bindings()))
      return invalid(item + ": bindings are misaligned in the manifest");
    if (auto *bindings = dispatch->bindings())
      for (size_t b = 0; b < bindings->size(); ++b)
        KILN_RETURN_IF_ERROR(checkBinding(
            bindings->Get(b), strFormat("%s binding %zu", item.c_str(), b)));
  }
  KILN_RETURN_IF_ERROR(validateCommands(*program, prefix, count, checkBinding));
  programs_.push_back(std::move(interface));
  return nullptr;
}

kiln_status_t Artifact::validateCommands(
    const fb::Program &program, const std::string &prefix,
    size_t dispatchCount,
    const std::function<kiln_status_t(const fb::Binding *,
                                      const std::string &)> &checkBinding) {
  auto *commands = program.commands();
  if (!commands)
    return nullptr;
  if (!elementsAligned(commands))
    return invalid(prefix + "commands are misaligned in the manifest");
  size_t count = commands->size();
  for (size_t i = 0; i < count; ++i) {
    const fb::Command *c = commands->Get(flatbuffers::uoffset_t(i));
    std::string item = strFormat("%scommand %zu", prefix.c_str(), i);
    auto bindings = [&](bool src, bool dst) -> kiln_status_t {
      if (src)
        KILN_RETURN_IF_ERROR(checkBinding(&c->src(), item + " source"));
      if (dst) {
        KILN_RETURN_IF_ERROR(checkBinding(&c->dst(), item + " destination"));
        if (c->dst().kind() != fb::BindingKind::Arena)
          return invalid(item + ": writes outside the arena");
      }
      return nullptr;
    };
    auto counter = [&]() -> kiln_status_t {
      if (c->counter() >= program.counters())
        return invalid(strFormat("%s: counter %u is out of range (the program "
                                 "has %u)",
                                 item.c_str(), c->counter(),
                                 program.counters()));
      return nullptr;
    };
    auto target = [&]() -> kiln_status_t {
      if (c->index() > count)
        return invalid(strFormat("%s: jumps to command %u, past the end (%zu "
                                 "commands)",
                                 item.c_str(), c->index(), count));
      return nullptr;
    };
    auto size = [&](const fb::Binding &b, uint64_t bytes,
                    const char *what) -> kiln_status_t {
      if (b.size() != bytes)
        return invalid(strFormat("%s: %s of %llu bytes, not %llu",
                                 item.c_str(), what, ull(b.size()),
                                 ull(bytes)));
      return nullptr;
    };
    switch (c->op()) {
    case fb::CommandOp::Dispatch:
      if (c->index() >= dispatchCount)
        return invalid(strFormat("%s: dispatch %u is out of range (%zu "
                                 "dispatches)",
                                 item.c_str(), c->index(), dispatchCount));
      break;
    case fb::CommandOp::Copy:
      KILN_RETURN_IF_ERROR(bindings(true, true));
      KILN_RETURN_IF_ERROR(size(c->dst(), c->src().size(), "a destination"));
      break;
    case fb::CommandOp::CopyToRow:
      KILN_RETURN_IF_ERROR(bindings(true, true));
      KILN_RETURN_IF_ERROR(counter());
      if (c->src().size() == 0 || c->dst().size() % c->src().size() != 0)
        return invalid(strFormat("%s: a destination of %llu bytes is no "
                                 "whole number of %llu-byte rows",
                                 item.c_str(), ull(c->dst().size()),
                                 ull(c->src().size())));
      break;
    case fb::CommandOp::CopyFromRow:
      KILN_RETURN_IF_ERROR(bindings(true, true));
      KILN_RETURN_IF_ERROR(counter());
      if (c->dst().size() == 0 || c->src().size() % c->dst().size() != 0)
        return invalid(strFormat("%s: a source of %llu bytes is no whole "
                                 "number of %llu-byte rows",
                                 item.c_str(), ull(c->src().size()),
                                 ull(c->dst().size())));
      break;
    case fb::CommandOp::JumpIfFalse:
      KILN_RETURN_IF_ERROR(bindings(true, false));
      KILN_RETURN_IF_ERROR(size(c->src(), 1, "a condition"));
      KILN_RETURN_IF_ERROR(target());
      break;
    case fb::CommandOp::Jump:
      KILN_RETURN_IF_ERROR(target());
      break;
    case fb::CommandOp::CounterReset:
    case fb::CommandOp::CounterIncrement:
      KILN_RETURN_IF_ERROR(counter());
      break;
    case fb::CommandOp::CounterStore:
      KILN_RETURN_IF_ERROR(bindings(false, true));
      KILN_RETURN_IF_ERROR(counter());
      KILN_RETURN_IF_ERROR(size(c->dst(), 8, "a destination"));
      break;
    case fb::CommandOp::JumpIfCounterAtLeast:
      KILN_RETURN_IF_ERROR(bindings(true, false));
      KILN_RETURN_IF_ERROR(counter());
      KILN_RETURN_IF_ERROR(size(c->src(), 8, "a limit"));
      KILN_RETURN_IF_ERROR(target());
      break;
    default:
      return invalid(strFormat("%s: unknown command %u", item.c_str(),
                               unsigned(c->op())));
    }
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

const unsigned char *Artifact::constants() const {
  return constantsSection_ < 0 ? nullptr
                               : data_ + sections_[constantsSection_].offset;
}

uint64_t Artifact::constantsSize() const {
  return constantsSection_ < 0 ? 0 : sections_[constantsSection_].size;
}

int Artifact::findCodeObject(const std::string &target) const {
  auto *objects = manifest_->code_objects();
  if (!objects)
    return -1;
  for (size_t i = 0; i < objects->size(); ++i)
    if (target == str(objects->Get(i)->target()))
      return int(i);
  return -1;
}

int Artifact::findBatchProgram(uint32_t batchSize) const {
  for (size_t i = 0; i < programs_.size(); ++i)
    if (programs_[i].batchSize == batchSize)
      return int(i);
  return -1;
}

int Artifact::findProgram(const char *name) const {
  auto *programs = manifest_->programs();
  if (!name)
    return 0; // validation guarantees at least one program
  for (size_t i = 0; i < programs->size(); ++i)
    if (std::strcmp(name, str(programs->Get(i)->name())) == 0)
      return int(i);
  return -1;
}

const char *kiln::rt::readElfHeader(const unsigned char *data, uint64_t size,
                                    uint16_t &machine, uint16_t &type) {
  if (size < sizeof(Elf64_Ehdr))
    return "too small to be an ELF file";
  if (std::memcmp(data, ELFMAG, SELFMAG) != 0)
    return "not an ELF file";
  if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB)
    return "not a 64-bit little-endian ELF file";
  Elf64_Ehdr header;
  std::memcpy(&header, data, sizeof(header));
  machine = header.e_machine;
  type = header.e_type;
  return nullptr;
}
