// NumPy .npy files (format 1.0, little-endian, C order): what `fixres extract` writes and
// `fixres eval-softmax` reads. float32, float64, int64, int32 and uint8 arrays.
#pragma once

#include <torch/torch.h>

#include <string>

namespace fixres::data {

// Atomic write (see Files.h; OutputError, exit code 6, when it fails). The tensor is made
// contiguous on the CPU first.
void writeNpy(const std::string& path, const torch::Tensor& tensor);
std::string encodeNpy(const torch::Tensor& tensor);

// The largest .npy file readNpy loads: 16 GiB (a float32 softmax of 50,000 images x 80,000
// classes).
inline constexpr uint64_t kNpyFileMaxBytes = uint64_t(16) << 30;

// DataError naming the file for a missing file, one that is not a regular file (a FIFO, a folder:
// refused without blocking) or larger than kNpyFileMaxBytes, a bad header, an unsupported dtype,
// Fortran order, or a size that does not match the header.
torch::Tensor readNpy(const std::string& path);
torch::Tensor decodeNpy(const char* data, size_t size, const std::string& nameForErrors);

}  // namespace fixres::data
