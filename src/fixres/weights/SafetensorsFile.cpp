// safetensors: the JSON header checked entry by entry when the file is opened; each tensor's
// bytes read from the file when it is needed.
#include "fixres/weights/SafetensorsFile.h"
#include "fixres/common/JsonInput.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fixres/common/ByteSource.h"
#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

using Json = nlohmann::ordered_json;

// Dimensions of one tensor past which a header is refused (real files have a handful).
constexpr size_t kMaxDims = 64;

struct DtypeName {
  const char* name;
  at::ScalarType dtype;
};
constexpr DtypeName kDtypes[] = {{"BOOL", at::kBool}, {"U8", at::kByte},       {"I8", at::kChar},
                                 {"I16", at::kShort}, {"I32", at::kInt},       {"I64", at::kLong},
                                 {"F16", at::kHalf},  {"BF16", at::kBFloat16}, {"F32", at::kFloat},
                                 {"F64", at::kDouble}};

std::string knownDtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

}  // namespace

std::string safetensorsDtypeName(at::ScalarType dtype) {
  for (const auto& d : kDtypes)
    if (d.dtype == dtype) return d.name;
  FIXRES_FAIL(WeightsError, "safetensors has no dtype for ", dtype, " (it stores ", knownDtypes(),
              ")");
}

struct SafetensorsFile::Impl {
  explicit Impl(ByteSource source) : bytes(std::move(source)) {}

  struct Entry {
    std::string name;
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // in the byte buffer
  };

  // "P: tensor X: <problem>"
  template <typename... Args>
  [[noreturn]] void fail(const std::string& tensor, Args&&... args) const {
    FIXRES_FAIL(WeightsError, bytes.name(), ": safetensors tensor '", tensor,
                "': ", std::forward<Args>(args)...);
  }

  void open() {
    FIXRES_CHECK(bytes.size() >= 8, WeightsError, bytes.name(),
                 " is truncated (a safetensors file starts with an 8-byte header length)");
    unsigned char n8[8];
    bytes.read(0, n8, 8, "header length");
    uint64_t n = 0;
    for (int k = 0; k < 8; ++k) n |= uint64_t{n8[k]} << (8 * k);
    FIXRES_CHECK(n <= bytes.size() - 8, WeightsError, bytes.name(), ": safetensors header length ",
                 n, " runs past the end of the file (", bytes.size(), " bytes): truncated?");
    FIXRES_CHECK(n <= kMaxSafetensorsHeader, WeightsError, bytes.name(), ": safetensors header of ",
                 n, " bytes is larger than the limit of ", kMaxSafetensorsHeader);
    std::string text(static_cast<size_t>(n), '\0');
    bytes.read(8, text.data(), text.size(), "header");
    bufferStart = 8 + n;
    bufferSize = bytes.size() - bufferStart;
    FIXRES_CHECK(!text.empty() && text[0] == '{', WeightsError, bytes.name(),
                 ": safetensors header does not start with '{'");
    Json header;
    std::string why;
    FIXRES_CHECK(parseJsonInput(text, &header, &why), WeightsError, bytes.name(),
                 ": safetensors header is not valid JSON (", why, ")");
    FIXRES_CHECK(header.is_object(), WeightsError, bytes.name(),
                 ": safetensors header is not a JSON object");
    for (const auto& [name, info] : header.items()) {
      if (name == "__metadata__") {
        readMetadata(info);
      } else {
        entries.push_back(readEntry(name, info));
      }
    }
    checkCoverage();
  }

  void readMetadata(const Json& info) {
    FIXRES_CHECK(info.is_object(), WeightsError, bytes.name(),
                 ": safetensors __metadata__ is not a JSON object");
    for (const auto& [key, value] : info.items()) {
      FIXRES_CHECK(value.is_string(), WeightsError, bytes.name(), ": safetensors __metadata__['",
                   key, "'] is not a string");
      metadata[key] = value.get<std::string>();
    }
  }

  Entry readEntry(const std::string& name, const Json& info) const {
    Entry e;
    e.name = name;
    if (!info.is_object()) fail(name, "not a JSON object");
    auto dtype = info.find("dtype");
    if (dtype == info.end() || !dtype->is_string()) fail(name, "no dtype string");
    const std::string dt = dtype->get<std::string>();
    auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                              [&](const DtypeName& d) { return dt == d.name; });
    if (known == std::end(kDtypes))
      fail(name, "dtype '", dt, "' is not supported (", knownDtypes(), ")");
    e.dtype = known->dtype;

    auto shape = info.find("shape");
    if (shape == info.end() || !shape->is_array()) fail(name, "no shape array");
    if (shape->size() > kMaxDims) fail(name, "more than ", kMaxDims, " dimensions");
    int64_t numel = 1;
    for (const Json& d : *shape) {
      if (!d.is_number_unsigned() ||
          d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(name, "shape ", jsonExcerpt(*shape), " is not a list of sizes >= 0");
      const auto size = static_cast<int64_t>(d.get<uint64_t>());
      if (size != 0 && numel > std::numeric_limits<int64_t>::max() / size)
        fail(name, "shape ", jsonExcerpt(*shape), " has more elements than any file");
      numel *= size;
      e.shape.push_back(size);
    }
    const auto itemSize = static_cast<int64_t>(c10::elementSize(e.dtype));
    if (numel > std::numeric_limits<int64_t>::max() / itemSize)
      fail(name, "shape ", jsonExcerpt(*shape), " has more bytes than any file");
    const auto nbytes = static_cast<uint64_t>(numel * itemSize);

    auto offsets = info.find("data_offsets");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      fail(name, "no data_offsets [begin, end]");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end || e.end > bufferSize)
      fail(name, "data_offsets [", e.begin, ", ", e.end, "] are outside the byte buffer of ",
           bufferSize, " bytes");
    if (e.end - e.begin != nbytes)
      fail(name, "data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
           " bytes, its dtype ", dt, " and shape ", jsonExcerpt(*shape), " need ", nbytes);
    return e;
  }

  // The tensors' bytes follow each other from the buffer's start to its end (no overlap, no
  // gap), as the safetensors library requires.
  void checkCoverage() const {
    std::vector<size_t> order(entries.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::tie(entries[a].begin, entries[a].end) <
             std::tie(entries[b].begin, entries[b].end);
    });
    uint64_t expected = 0;
    for (size_t k : order) {
      const Entry& e = entries[k];
      if (e.begin != expected)
        fail(e.name, "data_offsets [", e.begin, ", ", e.end, "] ",
             e.begin < expected ? "overlap another tensor's"
                                : "leave a gap after the previous tensor's",
             " (which end at ", expected, ")");
      expected = e.end;
    }
    FIXRES_CHECK(expected == bufferSize, WeightsError, bytes.name(),
                 ": the safetensors byte buffer has ", bufferSize, " bytes but its tensors cover ",
                 expected, ": truncated or damaged?");
  }

  // Entry `k`'s data as a CPU tensor.
  at::Tensor load(const Entry& e) const {
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype));
    if (t.numel() == 0) return t;
    bytes.read(bufferStart + e.begin, t.data_ptr(), static_cast<size_t>(e.end - e.begin),
               "tensor " + e.name);
    if (e.dtype == at::kBool) {
      const auto* p = static_cast<const uint8_t*>(t.data_ptr());
      if (std::any_of(p, p + t.numel(), [](uint8_t v) { return v > 1; }))
        fail(e.name, "BOOL values other than 0 and 1");
    }
    return t;
  }

  ByteSource bytes;
  uint64_t bufferStart = 0, bufferSize = 0;
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::unordered_map<const c10::TensorImpl*, size_t> lazy;  // lazy tensor -> entry
};

SafetensorsFile::SafetensorsFile(const std::string& path)
    : impl_(std::make_unique<Impl>(ByteSource(path))) {
  impl_->open();
}

SafetensorsFile::SafetensorsFile(const void* data, size_t size, const std::string& name)
    : impl_(std::make_unique<Impl>(ByteSource(data, size, name))) {
  impl_->open();
}

SafetensorsFile::~SafetensorsFile() = default;

const std::string& SafetensorsFile::path() const {
  return impl_->bytes.name();
}

c10::IValue SafetensorsFile::read(bool lazy) {
  c10::impl::GenericDict out(c10::StringType::get(), c10::TensorType::get());
  for (size_t k = 0; k < impl_->entries.size(); ++k) {
    const Impl::Entry& e = impl_->entries[k];
    at::Tensor t;
    if (lazy) {
      t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype).device(at::kMeta));
      impl_->lazy[t.unsafeGetTensorImpl()] = k;
    } else {
      t = impl_->load(e);
    }
    out.insert(e.name, t);
  }
  return out;
}

void SafetensorsFile::copyInto(const at::Tensor& src, at::Tensor& dst) {
  auto it = impl_->lazy.find(src.unsafeGetTensorImpl());
  FIXRES_CHECK(it != impl_->lazy.end(), InternalError, "copyInto: not a lazy tensor of ", path());
  FIXRES_CHECK(src.sizes() == dst.sizes(), WeightsError, path(), ": shape ", src.sizes(),
               " does not match ", dst.sizes());
  if (src.numel() == 0) return;
  at::NoGradGuard noGrad;
  dst.copy_(impl_->load(impl_->entries[it->second]));
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->metadata;
}

}  // namespace fixres::models
