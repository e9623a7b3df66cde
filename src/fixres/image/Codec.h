// The image formats fixres reads, as a registry of codecs: one file per codec (its reader and its
// Codec row), listed once in Codecs.cpp. Decoder (Decode.h) sniffs a file's first bytes against
// every codec; the dataset scan, the shard index, the index versions and `fixres version` ask
// the registry which extensions and formats there are.
//
// A new codec: a reader file defining `const Codec& xCodec()` (sniffing as PIL's _accept does, the
// size from the header, the whole image as 8-bit RGB as PIL's convert("RGB") gives it), its line
// in Codecs.cpp, and a reference test against PIL (tests/unit/image/FormatsReferenceTest.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fixres::image {

struct Codec {
  std::string name;                     // "jpeg", "png", "bmp", ...: fixres version, messages
  std::string title;                    // "JPEG", "WebP": messages
  std::vector<std::string> extensions;  // lower case, without the dot: "jpg", "jpeg"
  // Its extensions are torchvision's ImageFolder IMG_EXTENSIONS: dataset folders and shards list
  // such files (a folder of another format's files is left out, as torchvision leaves it out);
  // the others are read when named (predict's inputs, list files, --labels-csv).
  bool imageFolder = true;
  // The file's first bytes are this format's (PIL's _accept).
  bool (*sniff)(const uint8_t* data, size_t size) = nullptr;
  // What this build lacks to read it ("built without libwebp"); empty when it reads it.
  std::string missing;
  // The size from the header, and the whole image as 8-bit RGB into `out` (width * height * 3
  // bytes, rows packed); each returns an empty string on success, else the reason. Both null for
  // the formats Decoder reads itself (JPEG and PNG: region decoding, libjpeg's and libpng's state).
  std::string (*readSize)(const uint8_t* data, size_t size, int* width, int* height) = nullptr;
  std::string (*decodeRgb)(const uint8_t* data, size_t size, int width, int height,
                           uint8_t* out) = nullptr;
};

// Every codec, in sniffing order.
const std::vector<const Codec*>& codecs();

// The codec whose sniff accepts `data`, nullptr when none does.
const Codec* sniffCodec(const uint8_t* data, size_t size);

// `ext` (with or without its dot, any case) is an extension of an ImageFolder codec.
bool isImageFolderExtension(const std::string& ext);

// The ImageFolder extensions in registry order, ".jpg, .jpeg, .png, ..." (messages).
std::string imageFolderExtensionList();

// A number that changes when the ImageFolder extensions change: folder and shard indexes record
// it, and an index made with other extensions is scanned again.
uint32_t imageFolderListingStamp();

// The formats this build reads, e.g. "jpeg png bmp webp tiff pnm" (fixres version).
std::string builtFormats();

// "JPEG, PNG, BMP, WebP, TIFF or PNM": the formats there are, for "not an image" messages.
std::string formatTitles();

}  // namespace fixres::image
