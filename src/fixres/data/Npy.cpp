// .npy encoding and decoding.
#include "fixres/data/Npy.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"

namespace fixres::data {
namespace {

struct DtypeName {
  torch::ScalarType type;
  const char* descr;
};
const DtypeName kDtypes[] = {{torch::kFloat32, "<f4"},
                             {torch::kFloat64, "<f8"},
                             {torch::kInt64, "<i8"},
                             {torch::kInt32, "<i4"},
                             {torch::kUInt8, "|u1"}};

// numpy.load's own bound on the header (numpy.lib.format._MAX_HEADER_SIZE since numpy 1.24).
constexpr size_t kMaxNpyHeader = 10000;

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<std::string> shape;  // the decimal digits of each dimension
};

// The header is a Python dict literal with exactly the keys descr (a string), fortran_order
// (True/False) and shape (a tuple of non-negative integers), in any order, with single or double
// quotes and an optional trailing comma: what numpy.load accepts for the dtypes read here. One
// left-to-right scan with no recursion, no backtracking and no allocation beyond the values.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seenDescr = false, seenOrder = false, seenShape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr" && !seenDescr) {
        h.descr = quoted(), seenDescr = true;
      } else if (key == "fortran_order" && !seenOrder) {
        h.fortranOrder = boolean(), seenOrder = true;
      } else if (key == "shape" && !seenShape) {
        h.shape = tuple(), seenShape = true;
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skipSpace();
    if (pos_ != s_.size()) fail("text after the dict");
    if (!seenDescr) fail("no descr");
    if (!seenOrder) fail("no fortran_order");
    if (!seenShape) fail("no shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    FIXRES_FAIL(DataError, name_, ": malformed .npy header (", what, " at byte ", pos_, ")");
  }
  void skipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool peek(char c) {
    skipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) fail("escape in a string");
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (s_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  std::vector<std::string> tuple() {
    std::vector<std::string> dims;
    bool trailingComma = false;
    expect('(');
    while (!peek(')')) {
      const size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == start) fail("shape is not a tuple of integers");
      dims.emplace_back(s_.substr(start, pos_ - start));
      trailingComma = false;
      if (peek(')')) break;
      expect(',');
      trailingComma = true;
    }
    expect(')');
    // (3) is the integer 3 in Python, not a tuple: numpy.load refuses it.
    if (dims.size() == 1 && !trailingComma) fail("shape is not a tuple of integers");
    return dims;
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

NpyHeader parseNpyHeader(std::string_view text, const std::string& name) {
  return NpyHeaderParser(text, name).parse();
}

}  // namespace

std::string encodeNpy(const torch::Tensor& tensor) {
  auto t = tensor.detach().cpu().contiguous();
  const char* descr = nullptr;
  for (const auto& d : kDtypes)
    if (d.type == t.scalar_type()) descr = d.descr;
  FIXRES_CHECK(descr, InternalError, "npy: unsupported dtype ", t.scalar_type());
  std::string shape;
  for (int64_t i = 0; i < t.dim(); ++i) shape += (i ? ", " : "") + std::to_string(t.size(i));
  shape = "(" + shape + (t.dim() == 1 ? ",)" : ")");
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t preamble = 10;  // magic(6) + version(2) + header length(2)
  size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  uint16_t len = static_cast<uint16_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  out += header;
  out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

void writeNpy(const std::string& path, const torch::Tensor& tensor) {
  writeFileAtomic(path, encodeNpy(tensor));
}

torch::Tensor decodeNpy(const char* data, size_t size, const std::string& name) {
  FIXRES_CHECK(size >= 10 && std::memcmp(data, "\x93NUMPY", 6) == 0, DataError, name,
               ": not a .npy file");
  const int major = static_cast<unsigned char>(data[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    offset = 10;
  } else {
    FIXRES_CHECK(major == 2 || major == 3, DataError, name, ": unsupported .npy version ", major);
    FIXRES_CHECK(size >= 12, DataError, name, ": truncated .npy header");
    uint32_t l;
    std::memcpy(&l, data + 8, 4);
    headerLen = l;
    offset = 12;
  }
  FIXRES_CHECK(offset + headerLen <= size, DataError, name, ": truncated .npy header");
  FIXRES_CHECK(headerLen <= kMaxNpyHeader, DataError, name, ": .npy header is ", headerLen,
               " bytes, more than the ", kMaxNpyHeader, " numpy.load accepts");
  const NpyHeader h = parseNpyHeader(std::string_view(data + offset, headerLen), name);
  const std::string& descr = h.descr;
  FIXRES_CHECK(!h.fortranOrder, DataError, name, ": Fortran-ordered .npy arrays are not supported");
  std::string dims;
  for (size_t i = 0; i < h.shape.size(); ++i) dims += (i ? ", " : "") + h.shape[i];
  std::vector<int64_t> shape;
  // The element count is checked against the file size before anything is allocated, so a
  // header claiming a huge shape is a DataError, not an allocation failure.
  const size_t dataBytes = size - offset - headerLen;
  size_t count = 1;
  bool tooBig = false;
  for (const std::string& digits : h.shape) {
    unsigned long long d = 0;
    for (char c : digits) {
      if (d > (1ULL << 40)) break;
      d = d * 10 + static_cast<unsigned>(c - '0');
    }
    if (d > (1ULL << 40) || (d > 0 && count > (size_t(1) << 50) / d)) tooBig = true;
    if (!tooBig) count *= static_cast<size_t>(d);
    shape.push_back(tooBig ? 0 : static_cast<int64_t>(d));
  }
  torch::ScalarType type = torch::kFloat32;
  bool found = false;
  for (const auto& d : kDtypes)
    if (descr == d.descr) type = d.type, found = true;
  FIXRES_CHECK(found, DataError, name, ": unsupported .npy dtype '", descr, "'");
  const size_t bytes = count * c10::elementSize(type);
  FIXRES_CHECK(!tooBig && bytes == dataBytes, DataError, name, ": .npy data is ", dataBytes,
               " bytes, header shape (", dims, ") says ",
               tooBig ? std::string("far more") : std::to_string(bytes));
  auto t = torch::empty(shape, torch::dtype(type));
  if (bytes > 0) std::memcpy(t.data_ptr(), data + offset + headerLen, bytes);
  return t;
}

torch::Tensor readNpy(const std::string& path) {
  const std::string bytes = readRegularFile<DataError>(path, kNpyFileMaxBytes, ".npy file");
  return decodeNpy(bytes.data(), bytes.size(), path);
}

}  // namespace fixres::data
