// PNG encoding.
#include "fixres/image/Encode.h"

#include <png.h>

#include <csetjmp>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"

namespace fixres::image {
namespace {

void pngWrite(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}
void pngFlush(png_structp) {}

}  // namespace

void writePng(const std::string& path, int width, int height, int channels, const uint8_t* pixels) {
  FIXRES_CHECK(channels == 1 || channels == 3, InternalError, "writePng: channels must be 1 or 3");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  FIXRES_CHECK(png && info, InternalError, "libpng: out of memory");
  std::string out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    FIXRES_FAIL(OutputError, "cannot encode PNG ", path);
  }
  png_set_write_fn(png, &out, pngWrite, pngFlush);
  png_set_IHDR(png, info, width, height, 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y)
    png_write_row(png, const_cast<png_bytep>(pixels + static_cast<size_t>(y) * width * channels));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  writeFile(path, out);
}

}  // namespace fixres::image
