// Run-length encoded BMPs (BI_RLE8, BI_RLE4), which stb_image does not read, decoded as Pillow's
// BmpRleDecoder decodes them: encoded runs clipped at the row's end, absolute runs (RLE4: two
// pixels per byte, an odd count's last pixel dropped) word-aligned by file position, end of line
// filling the row with index 0, a delta escape skipping (right + up * width) pixels as the BMP
// specification says (Pillow 9.4 reads two bytes too many there), and data that ends before the
// last pixel an error ("not enough image data" in Pillow). Indices map through the palette
// (index 0 black beyond it); a palette that is the gray ramp (entry i = (i, i, i)) is not
// used: the index is the gray level, as Pillow's mode L.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fixres::image::formats {

// `d` is a BMP with a Windows header (40, 64, 108 or 124 bytes) and compression 1 or 2.
bool isRleBmp(const uint8_t* d, size_t n);

// As Codec::readSize and Codec::decodeRgb, for such a file.
std::string rleBmpSize(const uint8_t* d, size_t n, int* width, int* height);
std::string rleBmpDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out);

}  // namespace fixres::image::formats
