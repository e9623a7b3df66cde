// Small, fast, seedable random numbers for per-sample augmentation (xoshiro256** seeded through
// splitmix64). Every sample gets its own generator from (seed, epoch, index, stream position),
// so augmentations do not depend on thread count or scheduling.
#pragma once

#include <cmath>
#include <cstdint>

namespace fixres::image {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A well-mixed 64-bit key from the parts identifying one sample draw.
inline uint64_t sampleSeed(uint64_t seed, int64_t epoch, int64_t index, int64_t position) {
  uint64_t s = seed;
  uint64_t h = splitmix64(s);
  for (uint64_t part : {static_cast<uint64_t>(epoch), static_cast<uint64_t>(index),
                        static_cast<uint64_t>(position)}) {
    s = h ^ (part * 0xD6E8FEB86659FD93ull);
    h = splitmix64(s);
  }
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& v : s_) v = splitmix64(s);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi] (inclusive), unbiased.
  int64_t randint(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    if (range == 0) return static_cast<int64_t>(next());
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t v;
    do {
      v = next();
    } while (v >= limit);
    return lo + static_cast<int64_t>(v % range);
  }
  bool coin() { return (next() >> 63) != 0; }
  double normal(double mean, double stddev) {
    // Box-Muller; one draw per call keeps the stream simple.
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Gamma(shape, 1) by Marsaglia and Tsang's method; shape < 1 through
  // Gamma(shape) = Gamma(shape + 1) * U^(1 / shape). (AugMix's Dirichlet, mixup's Beta.)
  double gamma(double shape) {
    if (shape < 1.0) {
      double u = uniform();
      while (u <= 0.0) u = uniform();
      return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal(0.0, 1.0);
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace fixres::image
