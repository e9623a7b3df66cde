// .npy encoding and decoding.
#include "fixres/data/Npy.h"

#include <cstring>
#include <regex>

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
  std::string header(data + offset, headerLen);
  std::smatch m;
  FIXRES_CHECK(std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'")), DataError, name,
               ": .npy header without descr");
  std::string descr = m[1];
  FIXRES_CHECK(header.find("'fortran_order': False") != std::string::npos, DataError, name,
               ": Fortran-ordered .npy arrays are not supported");
  FIXRES_CHECK(std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")), DataError,
               name, ": .npy header without shape");
  std::vector<int64_t> shape;
  std::string dims = m[1];
  FIXRES_CHECK(std::regex_match(dims, std::regex("\\s*([0-9]+\\s*,\\s*)*([0-9]+\\s*,?\\s*)?")),
               DataError, name, ": .npy shape '(", dims, ")' is not a tuple of integers");
  std::regex num("[0-9]+");
  // The element count is checked against the file size before anything is allocated, so a
  // header claiming a huge shape is a DataError, not an allocation failure.
  const size_t dataBytes = size - offset - headerLen;
  size_t count = 1;
  bool tooBig = false;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator();
       ++it) {
    const std::string digits = it->str();
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
  auto bytes = readFile(path);
  return decodeNpy(bytes.data(), bytes.size(), path);
}

}  // namespace fixres::data
