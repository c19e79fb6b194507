//===- Npy.cpp - NumPy .npy read and write --------------------------------===//
//
// Layout: "\x93NUMPY", major, minor, header length (u16 for 1.x, u32 for 2.x
// and 3.x), then a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }
// padded with spaces and a newline, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "kiln/support/Npy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;

static const char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;

const char *npy::descriptor(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "<f4";
  case KILN_DTYPE_F16:
    return "<f2";
  case KILN_DTYPE_F64:
    return "<f8";
  case KILN_DTYPE_I8:
    return "|i1";
  case KILN_DTYPE_I16:
    return "<i2";
  case KILN_DTYPE_I32:
    return "<i4";
  case KILN_DTYPE_I64:
    return "<i8";
  case KILN_DTYPE_U8:
    return "|u1";
  case KILN_DTYPE_U16:
    return "<u2";
  case KILN_DTYPE_U32:
    return "<u4";
  case KILN_DTYPE_U64:
    return "<u8";
  case KILN_DTYPE_BOOL:
    return "|b1";
  case KILN_DTYPE_BF16:
    return nullptr;
  }
  return nullptr;
}

namespace {

/// A strict reader of the header dict: only what numpy writes (strings,
/// True/False, tuples of non-negative integers), no expressions.
class HeaderParser {
public:
  HeaderParser(const char *begin, const char *end) : p_(begin), end_(end) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape,
             std::string &error) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a dict", error);
    for (;;) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key in the header dict", error);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "' in the header", error);
      skipSpace();
      if (key == "descr") {
        if (p_ != end_ && *p_ == '[')
          return fail("structured dtypes are not supported", error);
        if (!parseString(descr))
          return fail("'descr' is not a string", error);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(fortran))
          return fail("'fortran_order' is not True or False", error);
        haveFortran = true;
      } else if (key == "shape") {
        if (!parseShape(shape, error))
          return false;
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "' in the header", error);
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}' in the header dict", error);
    }
    skipSpace();
    if (p_ != end_)
      return fail("unexpected text after the header dict", error);
    if (!haveDescr || !haveFortran || !haveShape)
      return fail(std::string("the header lacks '") +
                      (!haveDescr ? "descr" : !haveFortran ? "fortran_order"
                                                            : "shape") +
                      "'",
                  error);
    return true;
  }

private:
  static bool fail(const std::string &message, std::string &error) {
    error = message;
    return false;
  }
  void skipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' ||
                          *p_ == '\r' || *p_ == '\0'))
      ++p_;
  }
  bool consume(char c) {
    if (p_ == end_ || *p_ != c)
      return false;
    ++p_;
    return true;
  }
  bool parseString(std::string &out) {
    if (p_ == end_ || (*p_ != '\'' && *p_ != '"'))
      return false;
    char quote = *p_++;
    const char *start = p_;
    while (p_ != end_ && *p_ != quote) {
      if (*p_ == '\\' || *p_ == '\n')
        return false;
      ++p_;
    }
    if (p_ == end_)
      return false;
    out.assign(start, p_);
    ++p_;
    return true;
  }
  bool parseWord(const char *word) {
    size_t n = std::strlen(word);
    if (size_t(end_ - p_) < n || std::memcmp(p_, word, n) != 0)
      return false;
    p_ += n;
    return true;
  }
  bool parseBool(bool &out) {
    if (parseWord("True"))
      out = true;
    else if (parseWord("False"))
      out = false;
    else
      return false;
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    shape.clear();
    if (!consume('('))
      return fail("'shape' is not a tuple", error);
    for (;;) {
      skipSpace();
      if (consume(')'))
        return true;
      if (p_ == end_ || *p_ < '0' || *p_ > '9')
        return fail("'shape' holds something other than non-negative "
                    "integers",
                    error);
      int64_t value = 0;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
        int digit = *p_++ - '0';
        if (value > (INT64_MAX - digit) / 10)
          return fail("a dimension in 'shape' is too large", error);
        value = value * 10 + digit;
      }
      consume('L'); // Python 2 long literals
      shape.push_back(value);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return true;
      return fail("expected ',' or ')' in 'shape'", error);
    }
  }

  const char *p_;
  const char *end_;
};

/// Maps a descriptor to a dtype; `error` says why not.
bool dtypeFromDescriptor(const std::string &descr, kiln_dtype_t &dtype,
                         std::string &error) {
  struct Entry {
    const char *code;
    kiln_dtype_t dtype;
  };
  static const Entry entries[] = {
      {"f2", KILN_DTYPE_F16}, {"f4", KILN_DTYPE_F32}, {"f8", KILN_DTYPE_F64},
      {"i1", KILN_DTYPE_I8},  {"i2", KILN_DTYPE_I16}, {"i4", KILN_DTYPE_I32},
      {"i8", KILN_DTYPE_I64}, {"u1", KILN_DTYPE_U8},  {"b1", KILN_DTYPE_BOOL},
      {"u2", KILN_DTYPE_U16}, {"u4", KILN_DTYPE_U32}, {"u8", KILN_DTYPE_U64},
  };
  if (descr.size() == 3) {
    char order = descr[0];
    std::string code = descr.substr(1);
    for (const Entry &e : entries) {
      if (code != e.code)
        continue;
      bool oneByte = kiln_dtype_size(e.dtype) == 1;
      if (order == '<' || order == '=' || (order == '|' && oneByte) ||
          (order == '>' && oneByte)) {
        dtype = e.dtype;
        return true;
      }
      if (order == '>') {
        error = "big-endian data ('" + descr + "') is not supported";
        return false;
      }
      break;
    }
  }
  error = "unsupported dtype '" + descr +
          "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 b1, little-endian)";
  return false;
}

} // namespace

bool npy::parse(const void *data, size_t size, const std::string &name,
                Tensor &out, std::string &error) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  auto fail = [&](const std::string &message) {
    error = name + ": " + message;
    return false;
  };
  if (size < kMagicSize || std::memcmp(bytes, kMagic, kMagicSize) != 0)
    return fail("not a .npy file (bad magic)");
  if (size < kMagicSize + 2)
    return fail("truncated .npy header");
  unsigned major = bytes[6], minor = bytes[7];
  size_t headerLength = 0, headerStart = 0;
  if (major == 1) {
    if (size < 10)
      return fail("truncated .npy header");
    headerLength = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fail("truncated .npy header");
    headerLength = size_t(bytes[8]) | size_t(bytes[9]) << 8 |
                   size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24;
    headerStart = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major) + "." +
                std::to_string(minor));
  }
  if (headerLength > size - headerStart)
    return fail("truncated .npy header (" + std::to_string(headerLength) +
                " header bytes announced, " +
                std::to_string(size - headerStart) + " present)");
  const char *header = reinterpret_cast<const char *>(bytes + headerStart);
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  std::string headerError;
  HeaderParser parser(header, header + headerLength);
  if (!parser.parse(descr, fortran, shape, headerError))
    return fail("malformed .npy header: " + headerError);
  kiln_dtype_t dtype;
  std::string dtypeError;
  if (!dtypeFromDescriptor(descr, dtype, dtypeError))
    return fail(dtypeError);
  size_t nonUnitDims = 0;
  for (int64_t d : shape)
    nonUnitDims += d > 1;
  if (fortran && nonUnitDims > 1)
    return fail("Fortran-order arrays are not supported (save a C-order "
                "array, e.g. with np.ascontiguousarray)");

  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > UINT64_MAX / uint64_t(d))
      return fail("the shape's element count overflows");
    count *= uint64_t(d);
  }
  uint64_t itemSize = kiln_dtype_size(dtype);
  if (count > UINT64_MAX / itemSize)
    return fail("the shape's byte size overflows");
  uint64_t dataSize = count * itemSize;
  size_t dataStart = headerStart + headerLength;
  uint64_t present = size - dataStart;
  if (present < dataSize)
    return fail("truncated .npy data (the header describes " +
                std::to_string(dataSize) + " bytes, the file has " +
                std::to_string(present) + ")");
  if (present > dataSize)
    return fail(std::to_string(present - dataSize) +
                " unexpected bytes after the array data");
  Tensor result;
  result.dtype = dtype;
  result.shape = std::move(shape);
  result.data.assign(bytes + dataStart, bytes + dataStart + dataSize);
  out = std::move(result);
  return true;
}

bool npy::read(const std::string &path, Tensor &out, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  std::string bytes;
  bytes.resize(size_t(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = path + ": cannot read: " +
              (n < 0 ? std::strerror(errno) : "unexpected end of file");
      ::close(fd);
      return false;
    }
    done += size_t(n);
  }
  ::close(fd);
  return parse(bytes.data(), bytes.size(), path, out, error);
}

bool npy::encode(const Tensor &tensor, std::string &out, std::string &error) {
  const char *descr = descriptor(tensor.dtype);
  if (!descr) {
    error = std::string(kiln_dtype_name(tensor.dtype)) +
            " has no .npy dtype";
    return false;
  }
  uint64_t expected = kiln_dtype_size(tensor.dtype);
  for (int64_t d : tensor.shape) {
    if (d < 0) {
      error = "negative dimension in the shape";
      return false;
    }
    expected *= uint64_t(d);
  }
  if (expected != tensor.data.size()) {
    error = "the data size does not match the dtype and shape";
    return false;
  }
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    dict += std::to_string(tensor.shape[i]);
    if (i + 1 < tensor.shape.size() || tensor.shape.size() == 1)
      dict += i + 1 < tensor.shape.size() ? ", " : ",";
  }
  dict += "), }";
  // Pad with spaces and a final newline so the data starts 64-aligned.
  size_t prefix = dict.size() + 1 + 10 <= 65535 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  size_t length = dict.size();
  out.assign(kMagic, kMagicSize);
  if (prefix == 10) {
    out += '\x01';
    out += '\x00';
    out += char(length & 0xff);
    out += char(length >> 8);
  } else {
    out += '\x02';
    out += '\x00';
    for (int i = 0; i < 4; ++i)
      out += char((length >> (8 * i)) & 0xff);
  }
  out += dict;
  out.append(reinterpret_cast<const char *>(tensor.data.data()),
             tensor.data.size());
  return true;
}

bool npy::write(const std::string &path, const Tensor &tensor,
                std::string &error) {
  std::string bytes;
  if (!encode(tensor, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  std::string temporary = path + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0644);
  if (fd < 0) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = path + ": cannot write: " + std::strerror(errno);
      ::close(fd);
      unlink(temporary.c_str());
      return false;
    }
    done += size_t(n);
  }
  if (::close(fd) != 0 || rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write: " + std::strerror(errno);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}
