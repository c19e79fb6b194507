//===- TensorUtil.cpp - Helpers for the runtime tools ---------------------===//

#include "kiln/support/TensorUtil.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace kiln;

float support::halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    float value = std::ldexp(float(mantissa), -24); // zero or subnormal
    return sign ? -value : value;
  }
  if (exponent == 31)
    bits = sign | 0x7f800000u | (mantissa << 13); // inf or nan
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint16_t support::floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // nan: keep it quiet
    return uint16_t(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
  if (magnitude >= 0x47800000u) // >= 65536 (and inf): infinity
    return uint16_t(sign | 0x7c00);
  if (magnitude < 0x38800000u) { // below 2^-14: subnormal half or zero
    float scaled;
    std::memcpy(&scaled, &magnitude, 4);
    scaled = std::nearbyint(std::ldexp(scaled, 24)); // units of 2^-24
    return uint16_t(sign | uint16_t(scaled));
  }
  // Rebias the exponent (127 -> 15) and round the mantissa to 10 bits; a
  // carry correctly moves into the exponent (up to infinity).
  uint32_t half = (magnitude - 0x38000000u) >> 13;
  uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return uint16_t(sign | half);
}

float support::bfloat16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint16_t support::floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

namespace {
/// SplitMix64: small, fast, and the same on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1) with 24 random bits.
  float nextFloat() { return float(next() >> 40) * 0x1p-23f - 1.0f; }
};

template <typename T> void store(unsigned char *data, uint64_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}
template <typename T> T load(const unsigned char *data, uint64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}
} // namespace

uint64_t support::inputSeed(uint64_t seed, const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001b3ull;
  SplitMix64 mix{seed ^ h};
  return mix.next();
}

void support::fillRandom(Tensor &tensor, uint64_t seed) {
  uint64_t count = tensor.elementCount();
  tensor.data.resize(size_t(count * kiln_dtype_size(tensor.dtype)));
  unsigned char *d = tensor.data.data();
  SplitMix64 random{seed};
  for (uint64_t i = 0; i < count; ++i) {
    switch (tensor.dtype) {
    case KILN_DTYPE_F32:
      store<float>(d, i, random.nextFloat());
      break;
    case KILN_DTYPE_F64:
      store<double>(d, i, double(random.next() >> 11) * 0x1p-52 - 1.0);
      break;
    case KILN_DTYPE_F16:
      store<uint16_t>(d, i, floatToHalf(random.nextFloat()));
      break;
    case KILN_DTYPE_BF16:
      store<uint16_t>(d, i, floatToBfloat16(random.nextFloat()));
      break;
    case KILN_DTYPE_I8:
    case KILN_DTYPE_U8:
      d[i] = uint8_t(random.next() >> 62);
      break;
    case KILN_DTYPE_I16:
    case KILN_DTYPE_U16:
      store<int16_t>(d, i, int16_t(random.next() >> 62));
      break;
    case KILN_DTYPE_I32:
    case KILN_DTYPE_U32:
      store<int32_t>(d, i, int32_t(random.next() >> 62));
      break;
    case KILN_DTYPE_I64:
    case KILN_DTYPE_U64:
      store<int64_t>(d, i, int64_t(random.next() >> 62));
      break;
    case KILN_DTYPE_BOOL:
      d[i] = uint8_t(random.next() >> 63);
      break;
    }
  }
}

double support::elementAsDouble(const Tensor &tensor, uint64_t i) {
  const unsigned char *d = tensor.data.data();
  switch (tensor.dtype) {
  case KILN_DTYPE_F32:
    return load<float>(d, i);
  case KILN_DTYPE_F64:
    return load<double>(d, i);
  case KILN_DTYPE_F16:
    return halfToFloat(load<uint16_t>(d, i));
  case KILN_DTYPE_BF16:
    return bfloat16ToFloat(load<uint16_t>(d, i));
  case KILN_DTYPE_I8:
    return load<int8_t>(d, i);
  case KILN_DTYPE_U8:
  case KILN_DTYPE_BOOL:
    return d[i];
  case KILN_DTYPE_I16:
    return load<int16_t>(d, i);
  case KILN_DTYPE_I32:
    return load<int32_t>(d, i);
  case KILN_DTYPE_I64:
    return double(load<int64_t>(d, i));
  case KILN_DTYPE_U16:
    return load<uint16_t>(d, i);
  case KILN_DTYPE_U32:
    return load<uint32_t>(d, i);
  case KILN_DTYPE_U64:
    return double(load<uint64_t>(d, i));
  }
  return 0;
}

support::Summary support::summarize(const Tensor &tensor) {
  Summary s;
  size_t elementSize = kiln_dtype_size(tensor.dtype);
  uint64_t count = elementSize ? tensor.data.size() / elementSize : 0;
  s.count = count;
  double sum = 0;
  bool first = true;
  for (uint64_t i = 0; i < count; ++i) {
    double v = elementAsDouble(tensor, i);
    if (std::isnan(v)) {
      ++s.nanCount;
      continue;
    }
    if (first || v < s.min)
      s.min = v;
    if (first || v > s.max)
      s.max = v;
    first = false;
    sum += v;
  }
  uint64_t finite = count - s.nanCount;
  s.mean = finite ? sum / double(finite) : 0;
  return s;
}

std::string support::shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string support::sanitizeFileName(const std::string &name) {
  std::string result = name;
  for (size_t i = 0; i < result.size(); ++i) {
    char c = result[i];
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                (c == '.' && i != 0);
    if (!keep)
      result[i] = '_';
  }
  return result.empty() ? "output" : result;
}

bool support::flagValue(const std::string &arg, const char *flag, std::string &into) {
  size_t n = std::strlen(flag);
  if (arg.compare(0, n, flag) != 0)
    return false;
  into = arg.substr(n);
  return true;
}

bool support::parseUint64(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = uint64_t(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  out = value;
  return true;
}

bool support::parseDouble(const std::string &text, double &out) {
  if (text.empty() || text.size() > 64)
    return false;
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value))
    return false;
  out = value;
  return true;
}

bool support::equalsValueList(const Tensor &tensor, const std::string &list) {
  std::vector<double> values;
  size_t start = 0;
  // An empty list is the value of an empty tensor.
  while (!list.empty() && start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    double value;
    if (item == "true" || item == "false")
      value = item == "true";
    else if (!parseDouble(item, value))
      return false;
    values.push_back(value);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (values.size() != tensor.elementCount())
    return false;
  for (uint64_t i = 0; i < tensor.elementCount(); ++i) {
    double want = values[i];
    if (tensor.dtype == KILN_DTYPE_F32)
      want = double(float(want));
    if (elementAsDouble(tensor, i) != want)
      return false;
  }
  return true;
}

std::string support::jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}
