// The parts of the downloader that need no server: "URL#sha256=" parsing, the cache layout and
// what it reads of HTTP responses.
// The transfers themselves are tested end to end against a local server
// (tests/integration/download_test.sh).
#include "fixres/common/Download.h"

#include <gtest/gtest.h>

#include "fixres/common/Error.h"
#include "fixres/common/HttpResponse.h"

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

// The hashes are the first 16 hexadecimal digits of the SHA-256 of the URL, as
// `printf %s URL | sha256sum` prints them.
TEST(Download, CacheLayoutMirrorsTheUrl) {
  EXPECT_EQ(cachePathFor("/c",
                         "https://dl.fbaipublicfiles.com/FixRes_data/"
                         "FixRes_Pretrained_Models/ResNet50_v2.pth"),
            "/c/dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/"
            "ResNet50_v2-17a03801ed61183d.pth");
  EXPECT_EQ(cachePathFor("/c", "http://127.0.0.1:8123/files/w.pth"),
            "/c/127.0.0.1_8123/files/w-afedb576d763dcc5.pth");
  EXPECT_EQ(cachePathFor("/c", "https://Host.Example/a%20b/.hidden"),
            "/c/host.example/a_20b/_hidden-c0b061b5868c9053");
  EXPECT_EQ(cachePathFor("/c", "https://h/model.tar.gz"), "/c/h/model.tar-89ea2ea0b2fbde61.gz");
  EXPECT_EQ(cacheUrlFile("/c/h/w-0123456789abcdef.pth"), "/c/h/w-0123456789abcdef.pth.url");
  // Query strings make distinct names; dot segments are resolved or refused, never followed.
  EXPECT_EQ(cachePathFor("/c", "https://h/w.pth?v=1"), "/c/h/w-077a379734b0f1e6.pth");
  EXPECT_EQ(cachePathFor("/c", "https://h/w.pth?v=2"), "/c/h/w-6d19da35cc27958e.pth");
  EXPECT_EQ(cachePathFor("/c", "https://h/a/../w.pth"), "/c/h/w-c95628221a83d5e3.pth");
  for (const char* bad : {"https://h/", "https://h", "https://h/dir/", "not a url"})
    EXPECT_THROW(cachePathFor("/c", bad), UsageError) << bad;
}

// URLs whose readable parts sanitise to the same name still get a file each.
TEST(Download, UrlsThatSanitiseAlikeDoNotShareAFile) {
  EXPECT_EQ(cachePathFor("/c", "https://h/a~b.pth"), "/c/h/a_b-f9261fe12bfb3c85.pth");
  EXPECT_EQ(cachePathFor("/c", "https://h/a_b.pth"), "/c/h/a_b-f9b0dec478d6e30a.pth");
  EXPECT_EQ(cachePathFor("/c", "https://h/a%20b.pth"), "/c/h/a_20b-bdb448a6e7aedc79.pth");
  EXPECT_EQ(cachePathFor("/c", "https://h/a_20b.pth"), "/c/h/a_20b-3d12dab2f6786c7f.pth");
}

TEST(Download, ResponseHeadsAndBodies) {
  HttpResponseHead h;
  h.addLine("HTTP/1.1 302 Found\r\n");
  h.addLine("Content-Type: text/html\r\n");
  h.addLine("HTTP/1.1 206 Partial Content\r\n");  // a redirect's target: a new response
  EXPECT_EQ(h.contentType, "");
  h.addLine("content-range:  bytes 5-9/10\r\n");
  h.addLine("CONTENT-TYPE: application/octet-stream\r\n");
  EXPECT_EQ(h.contentRange, "bytes 5-9/10");
  EXPECT_EQ(h.contentType, "application/octet-stream");
  EXPECT_EQ(h.statusText(206), "HTTP 206 Partial Content");
  EXPECT_EQ(HttpResponseHead{}.statusText(200), "HTTP 200");
  int64_t start = 0, total = 0;
  EXPECT_TRUE(parseContentRange(h.contentRange, start, total));
  EXPECT_EQ(start, 5);
  EXPECT_EQ(total, 10);
  EXPECT_FALSE(parseContentRange("bytes */10", start, total));

  EXPECT_EQ(describeBody("<html><body>", "", 12), "an HTML page (12 bytes)");
  EXPECT_EQ(describeBody("\xef\xbb\xbf \n<!DOCTYPE HTML>", "", 30), "an HTML page (30 bytes)");
  EXPECT_EQ(describeBody("{}", "text/html; charset=utf-8", 2),
            "an HTML page (2 bytes, text/html; charset=utf-8)");
  EXPECT_EQ(describeBody("PK\x03\x04", "application/zip", 4), "4 bytes (application/zip)");
  EXPECT_EQ(describeBody("junk", "", 4), "4 bytes");
}

TEST(Download, NeedsACacheFolder) {
  DownloadOptions o;  // cacheDir empty: no HOME, no --cache-dir
  EXPECT_THROW(fetchToCache(parseRemoteFile("http://127.0.0.1:9/w.pth"), o), UsageError);
}

}  // namespace
}  // namespace fixres
