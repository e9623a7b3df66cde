// The torch storage classes named in torch.save pickles ("FloatStorage", ...) and their dtypes:
// one table, read one way by the unpickler and the other way by the pickler.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace fixres::models {

// The dtype of a storage class, with or without its module ("torch.HalfStorage" -> kHalf);
// "UntypedStorage" (sizes in bytes) -> kByte. WeightsError "unsupported tensor storage type X"
// for any other name.
at::ScalarType storageDtype(const std::string& className);

// The storage class of `dtype` ("FloatStorage", without module). WeightsError "cannot save
// tensors of dtype X" for dtypes torch.save has no typed storage class for here.
const char* storageClassName(at::ScalarType dtype);

}  // namespace fixres::models
