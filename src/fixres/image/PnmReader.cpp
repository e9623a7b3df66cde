// PNM decoding (PnmReader.h): Pillow's PpmImagePlugin and PpmDecoder rules.
#include "fixres/image/PnmReader.h"

#include <cstring>

#include "fixres/image/Codec.h"

#include <algorithm>
#include <cmath>

namespace fixres::image::formats {
namespace {

struct PnmHeader {
  char kind = 0;  // '1' .. '6'
  int width = 0, height = 0;
  unsigned maxval = 1;
  size_t dataOffset = 0;
};

// Pillow's _read_token: whitespace skipped before a token and ending it (consumed), '#' to the
// end of the line ignored anywhere, at most 10 characters.
bool pnmToken(const uint8_t* d, size_t n, size_t& pos, std::string& token, std::string& error) {
  token.clear();
  while (token.size() <= 10) {
    if (pos >= n) break;
    const uint8_t c = d[pos++];
    if (pnmSpace(c)) {
      if (token.empty()) continue;
      break;
    }
    if (c == '#') {
      while (pos < n && d[pos] != '\r' && d[pos] != '\n') ++pos;
      if (pos < n) ++pos;
      continue;
    }
    token += char(c);
  }
  if (token.empty()) {
    error = "reached the end of the file while reading the PNM header";
    return false;
  }
  if (token.size() > 10) {
    error = "token too long in the PNM header: " + token;
    return false;
  }
  return true;
}

bool pnmNumber(const std::string& token, int64_t* value) {
  if (token.empty() || token.size() > 10) return false;
  int64_t v = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

std::string pnmReadHeader(const uint8_t* d, size_t n, PnmHeader& h) {
  if (n < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6' || !pnmSpace(d[2])) {
    return "not a PNM file";
  }
  h.kind = char(d[1]);
  size_t pos = 3;
  std::string token, error;
  const bool bitmap = h.kind == '1' || h.kind == '4';
  int64_t values[3] = {0, 0, 1};
  const char* names[3] = {"width", "height", "maxval"};
  for (int i = 0; i < (bitmap ? 2 : 3); ++i) {
    if (!pnmToken(d, n, pos, token, error)) return error;
    if (!pnmNumber(token, &values[i])) return std::string("invalid PNM ") + names[i] + ": " + token;
  }
  if (values[0] <= 0 || values[1] <= 0 || values[0] > INT32_MAX || values[1] > INT32_MAX) {
    return "invalid PNM size " + std::to_string(values[0]) + "x" + std::to_string(values[1]);
  }
  if (!bitmap && (values[2] <= 0 || values[2] >= 65536)) {
    return "PNM maxval must be greater than 0 and less than 65536 (is " +
           std::to_string(values[2]) + ")";
  }
  h.width = int(values[0]);
  h.height = int(values[1]);
  h.maxval = unsigned(values[2]);
  h.dataOffset = pos;
  return {};
}

// Pillow's scaling of a sample to mode L/RGB (outMax 255) or I (outMax 65535): Python's
// round(value / maxval * outMax), which rounds half to even as nearbyint does by default.
inline unsigned pnmScale(unsigned value, unsigned maxval, unsigned outMax) {
  return unsigned(std::nearbyint(double(value) / double(maxval) * double(outMax)));
}

}  // namespace

std::string pnmSize(const uint8_t* d, size_t n, int* width, int* height) {
  PnmHeader h;
  std::string error = pnmReadHeader(d, n, h);
  *width = h.width;
  *height = h.height;
  return error;
}

std::string pnmDecode(const uint8_t* d, size_t n, int width, int height, uint8_t* out) {
  PnmHeader h;
  std::string error = pnmReadHeader(d, n, h);
  if (!error.empty()) return error;
  if (h.width != width || h.height != height) return "the PNM size changed while decoding";
  const size_t pixels = size_t(width) * height;
  const int bands = (h.kind == '3' || h.kind == '6') ? 3 : 1;
  // Gray with maxval above 255 is Pillow's mode I (up to 65535), clipped at 255 in RGB.
  const bool modeI = bands == 1 && h.kind != '1' && h.kind != '4' && h.maxval > 255;
  const unsigned outMax = modeI ? 65535 : 255;
  const auto put = [&](size_t sample, unsigned v) {
    if (modeI) v = std::min(v, 255u);
    if (bands == 3) {
      out[sample] = uint8_t(v);
    } else {
      out[3 * sample] = out[3 * sample + 1] = out[3 * sample + 2] = uint8_t(v);
    }
  };
  const uint8_t* data = d + h.dataOffset;
  const size_t available = n - h.dataOffset;
  const size_t samples = pixels * size_t(bands);
  if (h.kind == '4') {
    const size_t rowBytes = (size_t(width) + 7) / 8;
    if (available < rowBytes * height) return "image file is truncated";
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const bool black = (data[rowBytes * y + x / 8] >> (7 - x % 8)) & 1;  // 1 is black
        put(size_t(y) * width + x, black ? 0 : 255);
      }
    }
    return {};
  }
  if (h.kind == '5' || h.kind == '6') {
    const size_t bytes = h.maxval < 256 ? 1 : 2;
    if (available < samples * bytes) return "image file is truncated";
    for (size_t i = 0; i < samples; ++i) {
      unsigned v = bytes == 1 ? data[i] : unsigned(data[2 * i] << 8 | data[2 * i + 1]);
      if (h.maxval == 255 || (modeI && h.maxval == 65535)) {
        // Raw decoders: the stored value as it is.
      } else {
        v = std::min(outMax, pnmScale(v, h.maxval, outMax));
      }
      put(i, v);
    }
    return {};
  }
  // Plain (text) samples. Pillow removes each comment ('#' to the end of the line, the line end
  // included, joining what stands either side) and then splits the rest at whitespace.
  std::string text;
  text.reserve(available);
  for (size_t pos = 0; pos < available; ++pos) {
    if (data[pos] != '#') {
      text += char(data[pos]);
      continue;
    }
    while (pos < available && data[pos] != '\r' && data[pos] != '\n') ++pos;
  }
  size_t filled = 0;
  std::string token;
  for (size_t pos = 0; pos <= text.size() && filled < samples; ++pos) {
    const bool end = pos == text.size() || pnmSpace(uint8_t(text[pos]));
    if (h.kind == '1') {
      // Bitmaps: every character is a sample, whitespace optional; 1 is black.
      if (end) continue;
      if (text[pos] != '0' && text[pos] != '1') {
        return std::string("invalid token for this mode: ") + text[pos];
      }
      put(filled++, text[pos] == '1' ? 0 : 255);
      continue;
    }
    if (!end) {
      token += text[pos];
      if (token.size() > 10) return "token too long in the PNM data: " + token;
      continue;
    }
    if (token.empty()) continue;
    int64_t value = 0;
    if (!pnmNumber(token, &value)) return "invalid PNM sample: " + token;
    if (value > int64_t(h.maxval)) {
      return "channel value too large for this mode: " + std::to_string(value);
    }
    put(filled++, pnmScale(unsigned(value), h.maxval, outMax));
    token.clear();
  }
  if (filled < samples) return "not enough image data";
  return {};
}

}  // namespace fixres::image::formats

namespace fixres::image {
namespace {

bool pnmSniff(const uint8_t* d, size_t n) {
  return n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && formats::pnmSpace(d[2]);
}

}  // namespace

const Codec& pnmCodec() {
  static const Codec kCodec{"pnm",    "PNM", {"ppm", "pgm"},   /*imageFolder=*/true,
                            pnmSniff, "",    formats::pnmSize, formats::pnmDecode};
  return kCodec;
}

}  // namespace fixres::image
