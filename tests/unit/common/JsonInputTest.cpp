// JSON from files: nesting bounded at kMaxJsonDepth (64 levels parse, 65 and 100,000 are refused
// with a reason, without exhausting the stack), and excerpts for messages bounded in length,
// the JSON text's own start, with bytes that are not UTF-8 replaced.
#include "fixres/common/JsonInput.h"

#include <gtest/gtest.h>

#include <string>

namespace fixres {
namespace {

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonInput, NestingIsBounded) {
  nlohmann::json j;
  std::string why;
  EXPECT_TRUE(parseJsonInput(nested(kMaxJsonDepth), &j, &why)) << why;
  EXPECT_TRUE(j.is_array());
  for (int depth : {kMaxJsonDepth + 1, 100000}) {
    EXPECT_FALSE(parseJsonInput(nested(depth), &j, &why)) << depth;
    EXPECT_EQ(why, "nested deeper than 64 levels");
    EXPECT_TRUE(j.is_null());
  }
  nlohmann::ordered_json o;
  EXPECT_FALSE(parseJsonInput("{\"a\": " + nested(1000) + "}", &o, &why));
  EXPECT_TRUE(parseJsonInput(R"({"b": 1, "a": [2]})", &o, &why));
  EXPECT_EQ(o.begin().key(), "b");  // the ordered type keeps the file's order
  EXPECT_FALSE(parseJsonInput("{\"a\": ", &j, &why));
  EXPECT_NE(why.find("parse error"), std::string::npos) << why;
}

TEST(JsonInput, ExcerptsAreBounded) {
  const nlohmann::json big = std::vector<int>(10000, 7);
  const std::string e = jsonExcerpt(big);
  EXPECT_EQ(e.size(), 80u);
  EXPECT_EQ(e.substr(0, 77), big.dump().substr(0, 77));
  EXPECT_EQ(e.substr(77), "...");
  EXPECT_EQ(jsonExcerpt(nlohmann::json{1, 2}), "[1,2]");
  EXPECT_EQ(jsonExcerpt(nlohmann::json("caf\xe9")), "\"caf\xef\xbf\xbd\"");  // U+FFFD
}

// Text that fixres writes as JSON or CSV: each byte that is not UTF-8 becomes U+FFFD (as Python's
// bytes.decode("utf-8", "replace") does for these single bytes); valid text is unchanged.
TEST(JsonInput, WrittenTextIsUtf8) {
  EXPECT_EQ(validUtf8("caf\xe9"), "caf\xef\xbf\xbd");
  EXPECT_EQ(validUtf8("a\xff\xfe"), "a\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(validUtf8("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(validUtf8("plain"), "plain");
  EXPECT_EQ(jsonText(nlohmann::json{{"name", "caf\xe9"}}), "{\"name\":\"caf\xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace fixres
