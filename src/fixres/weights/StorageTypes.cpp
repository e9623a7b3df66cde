// Storage class names <-> dtypes.
#include "fixres/weights/StorageTypes.h"

#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

struct StorageType {
  const char* name;
  at::ScalarType dtype;
};

// For writing, the first entry of a dtype wins (kByte: ByteStorage, not UntypedStorage).
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", at::kFloat},
    {"DoubleStorage", at::kDouble},
    {"HalfStorage", at::kHalf},
    {"BFloat16Storage", at::kBFloat16},
    {"LongStorage", at::kLong},
    {"IntStorage", at::kInt},
    {"ShortStorage", at::kShort},
    {"CharStorage", at::kChar},
    {"ByteStorage", at::kByte},
    {"BoolStorage", at::kBool},
    {"ComplexFloatStorage", at::kComplexFloat},
    {"ComplexDoubleStorage", at::kComplexDouble},
    {"UntypedStorage", at::kByte},
};

}  // namespace

at::ScalarType storageDtype(const std::string& className) {
  auto dot = className.rfind('.');
  std::string name = dot == std::string::npos ? className : className.substr(dot + 1);
  for (const auto& t : kStorageTypes)
    if (name == t.name) return t.dtype;
  FIXRES_FAIL(WeightsError, "unsupported tensor storage type ", className);
}

const char* storageClassName(at::ScalarType dtype) {
  for (const auto& t : kStorageTypes)
    if (dtype == t.dtype) return t.name;
  FIXRES_FAIL(WeightsError, "cannot save tensors of dtype ", dtype);
}

}  // namespace fixres::models
