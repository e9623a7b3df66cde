// JPEG and PNG decoding to RGB with PIL's conversions, and the Decoder over every codec (Codec.h:
// the other formats are read by their own files).
// libjpeg and libpng report errors by longjmp: every function that calls into them sets its own
// jump point, keeps only trivially destructible state between that point and the library calls, and
// returns an error string that the C++ side turns into a DataError naming the file.
#include "fixres/image/Decode.h"

#include <jpeglib.h>
// jpeglib.h must come first: jerror.h uses its types.
#include <fcntl.h>
#include <jerror.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/image/Codec.h"

namespace fixres::image {
namespace {

// PIL reads 4-component JPEGs as "CMYK;I" (Adobe inverted) and converts CMYK to RGB with
// nk = 255 - k; c' = clip(nk - c * nk / 255) (Pillow's cmyk2rgb, MULDIV255 rounding).
inline uint8_t muldiv255(int a, int b) {
  int tmp = a * b + 128;
  return static_cast<uint8_t>(((tmp >> 8) + tmp) >> 8);
}
void cmykInvertedToRgb(const uint8_t* in, uint8_t* out, int width) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    // libjpeg hands out the stored (Adobe-inverted) values; PIL's "CMYK;I" unpacker inverts them.
    int c = 255 - in[0], m = 255 - in[1], y = 255 - in[2], k = 255 - in[3];
    int nk = 255 - k;
    out[0] = static_cast<uint8_t>(std::clamp(nk - muldiv255(c, nk), 0, 255));
    out[1] = static_cast<uint8_t>(std::clamp(nk - muldiv255(m, nk), 0, 255));
    out[2] = static_cast<uint8_t>(std::clamp(nk - muldiv255(y, nk), 0, 255));
  }
}

void grayToRgb(const uint8_t* in, uint8_t* out, int width) {
  for (int x = 0; x < width; ++x, out += 3) out[0] = out[1] = out[2] = in[x];
}

bool isJpeg(const uint8_t* d, size_t n) {
  return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF;
}
bool isPng(const uint8_t* d, size_t n) {
  static const uint8_t kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return n >= 8 && std::memcmp(d, kSig, 8) == 0;
}
// A JPEG whose last bytes are not the EOI marker is probably truncated: decode it whole so the
// truncation is reported exactly as PIL reports it, whatever region was asked for.
bool endsWithEoi(const uint8_t* d, size_t n) {
  while (n > 2 && d[n - 1] == 0) --n;  // some writers pad with zeros
  return n >= 4 && d[n - 2] == 0xFF && d[n - 1] == 0xD9;
}

}  // namespace

// ---- JPEG ------------------------------------------------------------------------------------
// (Outside the anonymous namespace: Decoder::Impl holds one.)
struct JpegError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool truncated = false;
  char message[JMSG_LENGTH_MAX] = {0};
};

namespace {

void jpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  // PIL ignores libjpeg's corrupt-data warnings but fails on a premature end of data.
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
  cinfo->err->num_warnings++;
}

}  // namespace

struct Decoder::Impl {
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool isJpeg = false;
  bool used = false;
  const Codec* other = nullptr;  // a codec with its own reader (not JPEG or PNG)
  // JPEG state.
  jpeg_decompress_struct cinfo{};
  JpegError jerr;
  bool jpegCreated = false;
  // PNG state.
  png_structp png = nullptr;
  png_infop pngInfo = nullptr;
  size_t pngOffset = 0;
  char pngMessage[256] = {0};
  int pngBitDepth = 0;
  int pngColorType = 0;

  ~Impl() {
    if (jpegCreated) jpeg_destroy_decompress(&cinfo);
    if (png) png_destroy_read_struct(&png, pngInfo ? &pngInfo : nullptr, nullptr);
  }

  // Each returns nullptr on success, else a message (owned by this Impl).
  const char* jpegOpen(int* width, int* height);
  // Rows region.top .. bottom into `wide` (resized to the decoded row width x region.height);
  // *left: the column of region.left in those rows (jpeg_crop_scanline widens the crop).
  const char* jpegDecode(Image& wide, const Rect& region, bool cropped, int* left);
  const char* pngOpen(int* width, int* height);
  const char* pngDecode(uint8_t* out, int width, int height);
};

const char* Decoder::Impl::jpegOpen(int* width, int* height) {
  cinfo.err = jpeg_std_error(&jerr.pub);
  jerr.pub.error_exit = jpegErrorExit;
  jerr.pub.emit_message = jpegEmitMessage;
  if (setjmp(jerr.jump)) return jerr.message;
  jpeg_create_decompress(&cinfo);
  jpegCreated = true;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (jerr.truncated) {
    std::snprintf(jerr.message, sizeof(jerr.message), "image file is truncated (in the header)");
    return jerr.message;
  }
  *width = static_cast<int>(cinfo.image_width);
  *height = static_cast<int>(cinfo.image_height);
  switch (cinfo.num_components) {
    case 1:
      cinfo.out_color_space = JCS_GRAYSCALE;
      break;
    case 3:
      cinfo.out_color_space = JCS_RGB;
      break;
    case 4:
      cinfo.out_color_space = JCS_CMYK;
      break;
    default:
      std::snprintf(jerr.message, sizeof(jerr.message), "cannot handle %d-layer JPEG images",
                    cinfo.num_components);
      return jerr.message;
  }
  return nullptr;
}

// Decodes the rows of `region` at the width libjpeg decodes them (the whole width, or the
// crop's when `cropped`), straight into `wide`: no copy of RGB rows. `cropped` uses
// libjpeg-turbo's jpeg_crop_scanline / jpeg_skip_scanlines with a margin of two chroma samples
// around the region (none fails the tests: the upsampler treats the crop border as an image
// edge), so that chroma upsampling at the region's border sees the same neighbours as in a full
// decode.
const char* Decoder::Impl::jpegDecode(Image& wide, const Rect& region, bool cropped, int* left) {
  if (setjmp(jerr.jump)) return jerr.message;
  jpeg_start_decompress(&cinfo);
  const int fullWidth = static_cast<int>(cinfo.output_width);
  const int fullHeight = static_cast<int>(cinfo.output_height);
  const int comps = cinfo.output_components;
  JDIMENSION xoff = 0, xwidth = static_cast<JDIMENSION>(fullWidth);
  int firstRow = 0;
  if (cropped) {
    const int margin = 2 * std::max(cinfo.max_h_samp_factor, cinfo.max_v_samp_factor);
    int x0 = std::max(0, region.left - margin);
    int x1 = std::min(fullWidth, region.left + region.width + margin);
    xoff = static_cast<JDIMENSION>(x0);
    xwidth = static_cast<JDIMENSION>(x1 - x0);
    if (xwidth < static_cast<JDIMENSION>(fullWidth)) jpeg_crop_scanline(&cinfo, &xoff, &xwidth);
    firstRow = std::max(0, region.top - margin);
    if (firstRow > 0) {
      firstRow = static_cast<int>(jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(firstRow)));
    }
  }
  const int rowWidth = static_cast<int>(cinfo.output_width);  // after a crop: xwidth
  *left = region.left - static_cast<int>(xoff);
  wide.width = rowWidth;
  wide.height = region.height;
  wide.pixels.resize(size_t(rowWidth) * region.height * 3);  // keeps a reused buffer's capacity
  // One scanline buffer from libjpeg's pool: freed with the decompressor, longjmp-safe.
  JSAMPARRAY line = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                               static_cast<JDIMENSION>(rowWidth * comps), 1);
  const int lastRow = region.top + region.height;  // exclusive
  for (int y = firstRow; y < lastRow; ++y) {
    if (comps == 3 && y >= region.top) {
      JSAMPROW row = wide.row(y - region.top);
      jpeg_read_scanlines(&cinfo, &row, 1);
      continue;
    }
    jpeg_read_scanlines(&cinfo, line, 1);
    if (y < region.top) continue;
    if (comps == 1) {
      grayToRgb(line[0], wide.row(y - region.top), rowWidth);
    } else {
      cmykInvertedToRgb(line[0], wide.row(y - region.top), rowWidth);
    }
  }
  if (jerr.truncated) {
    std::snprintf(jerr.message, sizeof(jerr.message), "image file is truncated");
    return jerr.message;
  }
  if (lastRow == fullHeight && !cropped) {
    jpeg_finish_decompress(&cinfo);
  } else {
    jpeg_abort_decompress(&cinfo);
  }
  if (jerr.truncated) {
    std::snprintf(jerr.message, sizeof(jerr.message), "image file is truncated");
    return jerr.message;
  }
  return nullptr;
}

// ---- PNG -------------------------------------------------------------------------------------
namespace {

void pngReadData(png_structp png, png_bytep out, png_size_t length) {
  auto* impl = static_cast<Decoder::Impl*>(png_get_io_ptr(png));
  if (impl->pngOffset + length > impl->size) png_error(png, "image file is truncated");
  std::memcpy(out, impl->data + impl->pngOffset, length);
  impl->pngOffset += length;
}

void pngError(png_structp png, png_const_charp message) {
  auto* impl = static_cast<Decoder::Impl*>(png_get_error_ptr(png));
  std::snprintf(impl->pngMessage, sizeof(impl->pngMessage), "%s", message);
  png_longjmp(png, 1);
}

void pngWarning(png_structp, png_const_charp) {}

}  // namespace

const char* Decoder::Impl::pngOpen(int* width, int* height) {
  png = png_create_read_struct(PNG_LIBPNG_VER_STRING, this, pngError, pngWarning);
  if (!png) return "cannot create a PNG decoder";
  pngInfo = png_create_info_struct(png);
  if (!pngInfo) return "cannot create a PNG decoder";
  if (setjmp(png_jmpbuf(png))) return pngMessage;
  // The pixel limit is ours; libpng's own default (1,000,000 per side) would reject less.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_set_read_fn(png, this, pngReadData);
  png_read_info(png, pngInfo);
  png_uint_32 w = 0, h = 0;
  int interlace = 0;
  png_get_IHDR(png, pngInfo, &w, &h, &pngBitDepth, &pngColorType, &interlace, nullptr, nullptr);
  *width = static_cast<int>(w);
  *height = static_cast<int>(h);
  return nullptr;
}

const char* Decoder::Impl::pngDecode(uint8_t* out, int width, int height) {
  if (setjmp(png_jmpbuf(png))) return pngMessage;
  // 16-bit grayscale is PIL mode "I": converting to RGB clips at 255, so keep all 16 bits here.
  const bool gray16 = pngColorType == PNG_COLOR_TYPE_GRAY && pngBitDepth == 16;
  if (pngColorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((pngColorType & PNG_COLOR_MASK_COLOR) == 0 && pngBitDepth < 8) {
    png_set_expand_gray_1_2_4_to_8(png);  // bit replication = PIL's L;1/L;2/L;4 unpackers
  }
  if (pngBitDepth == 16 && !gray16) png_set_strip_16(png);  // high byte, as PIL's *;16B
  if (!gray16 && (pngColorType & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_strip_alpha(png);  // PIL drops alpha (and tRNS) in convert("RGB"), no compositing
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, pngInfo);
  const size_t rowBytes = png_get_rowbytes(png, pngInfo);
  const size_t expected = gray16 ? size_t(width) * 2 : size_t(width) * 3;
  if (rowBytes != expected) {
    std::snprintf(pngMessage, sizeof(pngMessage), "unexpected PNG row size %zu", rowBytes);
    return pngMessage;
  }
  if (!gray16) {
    for (int pass = 0; pass < passes; ++pass) {
      for (int y = 0; y < height; ++y) png_read_row(png, out + size_t(y) * width * 3, nullptr);
    }
  } else {
    // Rows of 16-bit samples, big endian; interlaced images need the whole image at once.
    png_bytep buffer = static_cast<png_bytep>(png_malloc(png, rowBytes * size_t(height)));
    if (setjmp(png_jmpbuf(png))) {
      png_free(png, buffer);
      return pngMessage;
    }
    for (int pass = 0; pass < passes; ++pass) {
      for (int y = 0; y < height; ++y) png_read_row(png, buffer + rowBytes * y, nullptr);
    }
    for (int y = 0; y < height; ++y) {
      const uint8_t* src = buffer + rowBytes * y;
      uint8_t* dst = out + size_t(y) * width * 3;
      for (int x = 0; x < width; ++x, dst += 3) {
        int v = (src[2 * x] << 8) | src[2 * x + 1];
        dst[0] = dst[1] = dst[2] = static_cast<uint8_t>(std::min(v, 255));
      }
    }
    png_free(png, buffer);
  }
  // Every row is decoded (a truncated image fails above). Like Pillow, which stops reading at
  // the end of the image data, a damaged chunk after it is not an error. (This also replaces
  // the error handler that frees `buffer`: fuzzing found a 16-bit grayscale PNG with a broken
  // IEND chunk that freed it twice.)
  if (setjmp(png_jmpbuf(png))) return nullptr;
  png_read_end(png, nullptr);
  return nullptr;
}

// ---- Codec rows ------------------------------------------------------------------------------
const Codec& jpegCodec() {
  static const Codec kCodec{"jpeg", "JPEG", {"jpg", "jpeg"}, /*imageFolder=*/true,
                            isJpeg, "",     nullptr,         nullptr};
  return kCodec;
}

const Codec& pngCodec() {
  static const Codec kCodec{"png", "PNG", {"png"}, /*imageFolder=*/true,
                            isPng, "",    nullptr, nullptr};
  return kCodec;
}

// ---- Decoder ---------------------------------------------------------------------------------
Decoder::Decoder(const uint8_t* data, size_t size, std::string name, DecodeOptions options)
    : impl_(std::make_unique<Impl>()), name_(std::move(name)) {
  FIXRES_CHECK(data != nullptr && size > 0, DataError, name_,
               ": cannot identify image file (empty)");
  impl_->data = data;
  impl_->size = size;
  const char* error = nullptr;
  codec_ = sniffCodec(data, size);
  FIXRES_CHECK(codec_ != nullptr, DataError, name_, ": cannot identify image file (not a ",
               formatTitles(), " image)");
  FIXRES_CHECK(codec_->missing.empty(), DataError, name_, ": this build of fixres reads no ",
               codec_->title, " images (", codec_->missing, ")");
  if (codec_ == &jpegCodec()) {
    impl_->isJpeg = true;
    error = impl_->jpegOpen(&width_, &height_);
  } else if (codec_ == &pngCodec()) {
    error = impl_->pngOpen(&width_, &height_);
  } else {
    impl_->other = codec_;
    const std::string message = codec_->readSize(data, size, &width_, &height_);
    FIXRES_CHECK(message.empty(), DataError, name_, ": ", message);
  }
  FIXRES_CHECK(error == nullptr, DataError, name_, ": ", error);
  FIXRES_CHECK(width_ > 0 && height_ > 0, DataError, name_, ": invalid image size ", width_, "x",
               height_);
  const int64_t pixels = int64_t(width_) * height_;
  FIXRES_CHECK(options.maxPixels <= 0 || pixels <= options.maxPixels, DataError, name_,
               ": image size (", width_, "x", height_, " = ", pixels,
               " pixels) exceeds the limit of ", options.maxPixels,
               " pixels (possible decompression bomb)");
  // PIL warns (DecompressionBombWarning) above half its refusal limit: once per file here, not
  // on every epoch and loader thread that opens it again.
  if (options.maxPixels > 0 && pixels > options.maxPixels / 2) {
    log::warnOnce("decode-size:" + name_, name_, ": image size ", width_, "x", height_, " = ",
                  pixels, " pixels exceeds ", options.maxPixels / 2,
                  " pixels, could be a decompression bomb (refused above ", options.maxPixels, ")");
  }
}

Decoder::~Decoder() = default;

Image Decoder::decode() {
  return decodeRegion(Rect{0, 0, width_, height_});
}

Image Decoder::decodeRegion(const Rect& r) {
  Image buffer;
  const ImageView v = decodeRegionView(r, buffer);
  if (v.data == buffer.pixels.data() && v.width == buffer.width && v.height == buffer.height) {
    return buffer;
  }
  Image out(v.width, v.height, Uninitialized{});
  for (int y = 0; y < v.height; ++y) std::memcpy(out.row(y), v.row(y), size_t(v.width) * 3);
  return out;
}

ImageView Decoder::decodeRegionView(const Rect& r, Image& buffer) {
  FIXRES_CHECK(!impl_->used, InternalError, name_, ": Decoder used twice");
  impl_->used = true;
  FIXRES_CHECK(r.left >= 0 && r.top >= 0 && r.width > 0 && r.height > 0 &&
                   r.left + r.width <= width_ && r.top + r.height <= height_,
               InternalError, name_, ": region ", r.left, ",", r.top, " ", r.width, "x", r.height,
               " outside the image ", width_, "x", height_);
  const bool whole = r.left == 0 && r.top == 0 && r.width == width_ && r.height == height_;
  if (impl_->isJpeg && (whole || endsWithEoi(impl_->data, impl_->size))) {
    int left = 0;
    const char* error = impl_->jpegDecode(buffer, r, !whole, &left);
    FIXRES_CHECK(error == nullptr, DataError, name_, ": ", error);
    return ImageView(buffer).sub(left, 0, r.width, r.height);
  }
  // PNG and the other formats, or a JPEG without its end marker (where a truncation must be
  // reported, not cropped away): the whole image, then the region.
  if (impl_->isJpeg) {
    int left = 0;
    const char* error = impl_->jpegDecode(buffer, Rect{0, 0, width_, height_}, false, &left);
    FIXRES_CHECK(error == nullptr, DataError, name_, ": ", error);
  } else if (impl_->other != nullptr) {
    buffer.width = width_;
    buffer.height = height_;
    buffer.pixels.resize(size_t(width_) * height_ * 3);
    const std::string message =
        impl_->other->decodeRgb(impl_->data, impl_->size, width_, height_, buffer.pixels.data());
    FIXRES_CHECK(message.empty(), DataError, name_, ": ", message);
  } else {
    buffer.width = width_;
    buffer.height = height_;
    buffer.pixels.resize(size_t(width_) * height_ * 3);
    const char* error = impl_->pngDecode(buffer.pixels.data(), width_, height_);
    FIXRES_CHECK(error == nullptr, DataError, name_, ": ", error);
  }
  return ImageView(buffer).sub(r.left, r.top, r.width, r.height);
}

std::vector<uint8_t> readFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  FIXRES_CHECK(fd >= 0, DataError, path, ": cannot open file: ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  FIXRES_CHECK(::fstat(fd, &st) == 0, DataError, path,
               ": cannot read file: ", std::strerror(errno));
  FIXRES_CHECK(S_ISREG(st.st_mode), DataError, path,
               ": not a regular file (a folder, FIFO, socket or device)");
  FIXRES_CHECK(uint64_t(st.st_size) <= kMaxImageFileBytes, DataError, path, ": ", st.st_size,
               " bytes, more than an image file may have (", kMaxImageFileBytes >> 20, " MiB)");
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    FIXRES_CHECK(n >= 0, DataError, path, ": read error: ", std::strerror(errno));
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

Image decodeImage(const uint8_t* data, size_t size, const std::string& name,
                  const DecodeOptions& options) {
  Decoder decoder(data, size, name, options);
  return decoder.decode();
}

Image decodeFile(const std::string& path, const DecodeOptions& options) {
  const std::vector<uint8_t> bytes = readFile(path);
  return decodeImage(bytes.data(), bytes.size(), path, options);
}

}  // namespace fixres::image
