// The codec registry (Codec.h): the one list of image formats, and the lookups over it.
#include "fixres/image/Codec.h"

#include <algorithm>
#include <cctype>

#include "fixres/common/Crc32c.h"

namespace fixres::image {

const Codec& jpegCodec();  // Decode.cpp
const Codec& pngCodec();   // Decode.cpp
const Codec& bmpCodec();   // BmpReader.cpp
const Codec& webpCodec();  // WebpReader.cpp
const Codec& tiffCodec();  // TiffReader.cpp
const Codec& pnmCodec();   // PnmReader.cpp
const Codec& gifCodec();   // GifReader.cpp

const std::vector<const Codec*>& codecs() {
  static const std::vector<const Codec*> kCodecs = {
      &jpegCodec(), &pngCodec(), &bmpCodec(), &webpCodec(), &tiffCodec(), &pnmCodec(), &gifCodec(),
  };
  return kCodecs;
}

const Codec* sniffCodec(const uint8_t* data, size_t size) {
  for (const Codec* c : codecs())
    if (c->sniff(data, size)) return c;
  return nullptr;
}

bool isImageFolderExtension(const std::string& ext) {
  std::string lower = !ext.empty() && ext[0] == '.' ? ext.substr(1) : ext;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const Codec* c : codecs()) {
    if (!c->imageFolder) continue;
    if (std::find(c->extensions.begin(), c->extensions.end(), lower) != c->extensions.end())
      return true;
  }
  return false;
}

std::string imageFolderExtensionList() {
  std::string s;
  for (const Codec* c : codecs()) {
    if (!c->imageFolder) continue;
    for (const auto& e : c->extensions) s += (s.empty() ? "." : ", .") + e;
  }
  return s;
}

uint32_t imageFolderListingStamp() {
  std::vector<std::string> all;
  for (const Codec* c : codecs())
    if (c->imageFolder) all.insert(all.end(), c->extensions.begin(), c->extensions.end());
  std::sort(all.begin(), all.end());
  std::string joined;
  for (const auto& e : all) joined += e + " ";
  return crc32c(joined);
}

std::string builtFormats() {
  std::string s;
  for (const Codec* c : codecs())
    if (c->missing.empty()) s += (s.empty() ? "" : " ") + c->name;
  return s;
}

std::string formatTitles() {
  std::string s;
  const auto& all = codecs();
  for (size_t i = 0; i < all.size(); ++i)
    s += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i]->title;
  return s;
}

}  // namespace fixres::image
