// SHA-256 through OpenSSL's libcrypto (EVP_sha256); the files read in 1 MiB chunks.
#include "fixres/common/Sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres {

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const {
  EVP_MD_CTX_free(ctx);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  FIXRES_CHECK(ctx_, InternalError, "libcrypto could not make a digest context");
  reset();
}

Sha256::~Sha256() = default;

void Sha256::reset() {
  FIXRES_CHECK(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1, InternalError,
               "libcrypto's SHA-256 did not start");
}

void Sha256::update(const void* data, size_t size) {
  FIXRES_CHECK(EVP_DigestUpdate(ctx_.get(), data, size) == 1, InternalError,
               "libcrypto's SHA-256 refused ", size, " bytes");
}

std::string Sha256::hexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  FIXRES_CHECK(EVP_DigestFinal_ex(ctx_.get(), digest, &size) == 1 && size == 32, InternalError,
               "libcrypto's SHA-256 did not finish");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256Hex(const std::string& bytes) {
  Sha256 s;
  s.update(bytes.data(), bytes.size());
  return s.hexDigest();
}

std::string sha256File(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  FIXRES_CHECK(fd >= 0, DataError, "cannot read ", path, ": ", std::strerror(errno));
  Sha256 s;
  std::vector<char> chunk(size_t(1) << 20);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      FIXRES_FAIL(DataError, "cannot read ", path, ": ", why);
    }
    if (n == 0) break;
    s.update(chunk.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return s.hexDigest();
}

}  // namespace fixres
