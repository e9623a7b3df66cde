// SHA-256 (FIPS 180-4), streamed, for checking downloaded weight files against published digests
// and naming cached files: OpenSSL's libcrypto (its EVP digest interface) behind a small class.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace fixres {

// Feed bytes with update() in any chunking; hexDigest() ends the message and returns the 64
// lower-case hexadecimal digits. After hexDigest() the object must be reset() before reuse.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void reset();
  void update(const void* data, size_t size);
  std::string hexDigest();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

// The digest of a whole string.
std::string sha256Hex(const std::string& bytes);

// The digest of the file at `path`, read in 1 MiB chunks. DataError naming the file when it
// cannot be read.
std::string sha256File(const std::string& path);

}  // namespace fixres
