//===- ArtifactFormat.h - .kiln header layout and checksum ------*- C++ -*-===//
//
// The fixed part of the .kiln format (docs/artifact-format.md): header and
// section table layout, section kinds, and the FNV-1a 64 checksum over
// little-endian 64-bit words. Shared by the writer (compiler/artifact) and
// the reader (runtime) so the two cannot drift. Plain C++17, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SCHEMA_ARTIFACTFORMAT_H
#define KILN_RUNTIME_SCHEMA_ARTIFACTFORMAT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln::artifact::format {

/// `K I L N A R T \0`.
inline constexpr unsigned char kMagic[8] = {'K', 'I', 'L', 'N',
                                            'A', 'R', 'T', 0};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint64_t kHeaderSize = 64;
inline constexpr uint64_t kSectionEntrySize = 32;
/// Every section starts at a multiple of this.
inline constexpr uint64_t kSectionAlignment = 64;
/// The FlatBuffers file identifier of the manifest.
inline constexpr char kManifestIdentifier[5] = "KLNM";

/// Byte offsets of the header fields.
namespace header {
inline constexpr size_t kMagic = 0;
inline constexpr size_t kVersion = 8;
inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kFileSize = 16;
inline constexpr size_t kChecksum = 24;
inline constexpr size_t kSectionCount = 32;
inline constexpr size_t kReserved = 36;
} // namespace header

/// Byte offsets of the fields of one section table entry.
namespace entry {
inline constexpr size_t kKind = 0;
inline constexpr size_t kFlags = 4;
inline constexpr size_t kOffset = 8;
inline constexpr size_t kSize = 16;
inline constexpr size_t kReserved = 24;
} // namespace entry

enum class SectionKind : uint32_t {
  Manifest = 1,
  Constants = 2,
  CodeObject = 3,
};

/// Name of a section kind for messages ("manifest", "constants", ...).
inline const char *sectionKindName(uint32_t kind) {
  switch (kind) {
  case uint32_t(SectionKind::Manifest):
    return "manifest";
  case uint32_t(SectionKind::Constants):
    return "constants";
  case uint32_t(SectionKind::CodeObject):
    return "code object";
  default:
    return "unknown";
  }
}

/// `value` rounded up to a multiple of `kSectionAlignment`; the caller makes
/// sure it does not overflow (values here are file offsets).
inline constexpr uint64_t alignUp(uint64_t value) {
  return (value + kSectionAlignment - 1) & ~(kSectionAlignment - 1);
}

inline uint32_t loadLE32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
inline uint64_t loadLE64(const unsigned char *p) {
  return uint64_t(loadLE32(p)) | uint64_t(loadLE32(p + 4)) << 32;
}
inline void storeLE32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void storeLE64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}

/// Streaming FNV-1a 64 over little-endian 64-bit words. Bytes can be fed in
/// pieces of any size; `finish` zero-pads the last partial word. The caller
/// feeds the header with its checksum field zeroed.
class Checksum {
public:
  void update(const void *data, size_t size) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    if (pending_ != 0) {
      while (size != 0 && pending_ != 8) {
        word_[pending_++] = *p++;
        --size;
      }
      if (pending_ != 8)
        return;
      mix(loadLE64(word_));
      pending_ = 0;
    }
    while (size >= 8) {
      mix(loadWord(p));
      p += 8;
      size -= 8;
    }
    // Here pending_ is 0 and size < 8.
    std::memcpy(word_, p, size);
    pending_ = size;
  }

  /// Feeds `size` zero bytes.
  void updateZeros(uint64_t size) {
    static const unsigned char zeros[256] = {};
    while (size != 0) {
      size_t n = size < sizeof(zeros) ? size_t(size) : sizeof(zeros);
      update(zeros, n);
      size -= n;
    }
  }

  uint64_t finish() const {
    uint64_t h = hash_;
    if (pending_ != 0) {
      unsigned char last[8] = {};
      std::memcpy(last, word_, pending_);
      h = (h ^ loadLE64(last)) * kPrime;
    }
    return h;
  }

private:
  static constexpr uint64_t kPrime = 0x100000001b3ull;

  static uint64_t loadWord(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
#else
    return loadLE64(p);
#endif
  }
  void mix(uint64_t w) { hash_ = (hash_ ^ w) * kPrime; }

  uint64_t hash_ = 0xcbf29ce484222325ull;
  unsigned char word_[8] = {};
  size_t pending_ = 0;
};

} // namespace kiln::artifact::format

#endif // KILN_RUNTIME_SCHEMA_ARTIFACTFORMAT_H
