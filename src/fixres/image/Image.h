// An 8-bit RGB image in memory (HWC, interleaved, rows packed) and a non-owning view of a region.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace fixres::image {

// An allocator whose resize() leaves bytes uninitialised (default-init), for buffers that are
// written in full right after allocation.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using PixelBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;
struct Uninitialized {};

// Owns width x height x 3 bytes: pixel (x, y) channel c at pixels[(y * width + x) * 3 + c].
struct Image {
  int width = 0;
  int height = 0;
  PixelBuffer pixels;

  Image() = default;
  Image(int w, int h) : width(w), height(h), pixels(static_cast<size_t>(w) * h * 3, 0) {}  // black
  Image(int w, int h, Uninitialized)
      : width(w), height(h), pixels(static_cast<size_t>(w) * h * 3) {}
  uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * width * 3; }
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * width * 3; }
  bool empty() const { return width == 0 || height == 0; }
};

// A read-only window on RGB rows: pixel (x, y) at data + y * stride + x * 3. Does not own data.
struct ImageView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  size_t stride = 0;  // bytes between rows

  ImageView() = default;
  ImageView(const Image& im)  // NOLINT(google-explicit-constructor): a view of the whole image
      : data(im.pixels.data()), width(im.width), height(im.height), stride(size_t(im.width) * 3) {}
  const uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
  // The sub-rectangle starting at (left, top); the caller keeps it inside the view.
  ImageView sub(int left, int top, int w, int h) const {
    ImageView v;
    v.data = data + static_cast<size_t>(top) * stride + static_cast<size_t>(left) * 3;
    v.width = w;
    v.height = h;
    v.stride = stride;
    return v;
  }
};

// An axis-aligned rectangle in pixel coordinates.
struct Rect {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

}  // namespace fixres::image
