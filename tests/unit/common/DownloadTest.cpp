// The parts of the downloader that need no server: "URL#sha256=" parsing and the cache layout.
// The transfers themselves are tested end to end against a local server
// (tests/integration/download_test.sh).
#include "fixres/common/Download.h"

#include <gtest/gtest.h>

#include "fixres/common/Error.h"

namespace fixres {
namespace {

TEST(Download, RemoteFilesAreHttpAndHttpsUrls) {
  EXPECT_TRUE(isRemoteFile("https://dl.fbaipublicfiles.com/x.pth"));
  EXPECT_TRUE(isRemoteFile("http://127.0.0.1:8000/w.pth"));
  EXPECT_FALSE(isRemoteFile("weights/https.pth"));
  EXPECT_FALSE(isRemoteFile("ftp://host/w.pth"));
  EXPECT_FALSE(isRemoteFile(""));
}

TEST(Download, ChecksumFragment) {
  auto f = parseRemoteFile("https://h/w.pth");
  EXPECT_EQ(f.url, "https://h/w.pth");
  EXPECT_EQ(f.sha256, "");
  f = parseRemoteFile("https://h/w-827b6e33.pth#sha256=827B6E33");
  EXPECT_EQ(f.url, "https://h/w-827b6e33.pth");
  EXPECT_EQ(f.sha256, "827b6e33");  // lower case
  EXPECT_EQ(remoteFileSpec(f), "https://h/w-827b6e33.pth#sha256=827b6e33");
  const std::string full(64, 'a');
  EXPECT_EQ(parseRemoteFile("https://h/w.pth#sha256=" + full).sha256, full);
  for (const char* bad :
       {"https://h/w.pth#sha256=1234567", "https://h/w.pth#sha256=xyz12345",
        "https://h/w.pth#md5=12345678", "https://h/w.pth#", "https://h/w.pth#sha256="})
    EXPECT_THROW(parseRemoteFile(bad), UsageError) << bad;
  EXPECT_THROW(parseRemoteFile("https://h/w.pth#sha256=" + std::string(65, 'a')), UsageError);
}

TEST(Download, CacheLayoutMirrorsTheUrl) {
  EXPECT_EQ(cachePathFor("/c",
                         "https://dl.fbaipublicfiles.com/FixRes_data/"
                         "FixRes_Pretrained_Models/ResNet50_v2.pth"),
            "/c/dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/ResNet50_v2.pth");
  EXPECT_EQ(cachePathFor("/c", "http://127.0.0.1:8123/files/w.pth"),
            "/c/127.0.0.1_8123/files/w.pth");
  EXPECT_EQ(cachePathFor("/c", "https://Host.Example/a%20b/.hidden"),
            "/c/host.example/a_20b/_hidden");
  // Query strings make distinct names; dot segments are resolved or refused, never followed.
  const std::string q1 = cachePathFor("/c", "https://h/w.pth?v=1");
  const std::string q2 = cachePathFor("/c", "https://h/w.pth?v=2");
  EXPECT_NE(q1, q2);
  EXPECT_EQ(q1.rfind("/c/h/w.pth-q", 0), 0u) << q1;
  EXPECT_EQ(cachePathFor("/c", "https://h/a/../w.pth").find(".."), std::string::npos);
  for (const char* bad : {"https://h/", "https://h", "https://h/dir/", "not a url"})
    EXPECT_THROW(cachePathFor("/c", bad), UsageError) << bad;
}

TEST(Download, NeedsACacheFolder) {
  DownloadOptions o;  // cacheDir empty: no HOME, no --cache-dir
  EXPECT_THROW(fetchToCache(parseRemoteFile("http://127.0.0.1:9/w.pth"), o), UsageError);
}

}  // namespace
}  // namespace fixres
