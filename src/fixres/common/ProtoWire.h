// Protocol buffers' wire format written by hand (protobuf's encoding guide): varints, keys of
// field number << 3 | wire type, little-endian fixed-width numbers and length-delimited bytes or
// submessages. What fixres's hand-written messages share (TensorBoard events, ONNX models): no
// protobuf library is linked, so none can clash with the one inside a PyTorch wheel's LibTorch.
//
// Fields are written into a sink, anything with `void raw(const void*, size_t)`: Bytes keeps
// them, Size only counts them. messageField writes a submessage by running its body twice,
// once into a Size to learn its length, so large payloads are copied once.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace fixres::proto {

enum class Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct Bytes {
  std::string data;
  void raw(const void* p, size_t k) { data.append(static_cast<const char*>(p), k); }
};

struct Size {
  size_t n = 0;
  void raw(const void*, size_t k) { n += k; }
};

template <class Sink>
void varint(Sink& s, uint64_t v) {
  uint8_t buf[10];
  size_t k = 0;
  while (v >= 0x80) {
    buf[k++] = static_cast<uint8_t>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[k++] = static_cast<uint8_t>(v);
  s.raw(buf, k);
}

template <class Sink>
void key(Sink& s, uint32_t field, Wire wire) {
  varint(s, (static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(wire));
}

// `v`'s bytes, least significant first, whatever the host's byte order.
template <class Sink, class T>
void littleEndian(Sink& s, T v) {
  uint8_t buf[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) buf[i] = static_cast<uint8_t>((v >> (8 * i)) & 0xFF);
  s.raw(buf, sizeof(T));
}

// int32, int64, uint64, bool and enum fields: a varint of the two's complement (10 bytes when
// negative, as protobuf writes int32 and int64).
template <class Sink>
void intField(Sink& s, uint32_t field, int64_t v) {
  key(s, field, Wire::kVarint);
  varint(s, static_cast<uint64_t>(v));
}

template <class Sink>
void floatField(Sink& s, uint32_t field, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  key(s, field, Wire::kFixed32);
  littleEndian(s, bits);
}

template <class Sink>
void doubleField(Sink& s, uint32_t field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  key(s, field, Wire::kFixed64);
  littleEndian(s, bits);
}

// string and bytes fields, and submessages already written.
template <class Sink>
void bytesField(Sink& s, uint32_t field, std::string_view bytes) {
  key(s, field, Wire::kLengthDelimited);
  varint(s, bytes.size());
  s.raw(bytes.data(), bytes.size());
}

// A submessage whose fields `body(sink)` writes (a generic lambda: it is called with a Size
// first, then with `s`).
template <class Sink, class Body>
void messageField(Sink& s, uint32_t field, const Body& body) {
  Size size;
  body(size);
  key(s, field, Wire::kLengthDelimited);
  varint(s, size.n);
  body(s);
}

}  // namespace fixres::proto
