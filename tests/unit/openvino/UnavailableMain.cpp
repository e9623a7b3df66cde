// The stand-in of a build without OpenVINO (runtime/openvino/Unavailable.cpp), linked on its own in
// every build, so that a build without the OpenVINO wheel still links: it says it has no OpenVINO,
// supports no precision and refuses each use with a UsageError naming the use.
#include <cstdio>
#include <string>

#include "fixres/common/Error.h"
#include "fixres/runtime/OpenVinoSession.h"

int main() {
  using namespace fixres;
  int failures = 0;
  const auto check = [&](bool ok, const char* what) {
    if (!ok) std::printf("FAIL: %s\n", what);
    failures += ok ? 0 : 1;
  };
  check(!engine::openVinoBuiltIn(), "openVinoBuiltIn() is false");
  check(engine::openVinoVersion().empty(), "no version");
  check(!engine::openVinoSupports(engine::Precision::kFp32), "no fp32");
  const auto refuses = [&](auto use, const char* what) {
    try {
      use();
      check(false, what);
    } catch (const UsageError& e) {
      check(std::string(e.what()).find(what) != std::string::npos &&
                std::string(e.what()).find("no OpenVINO") != std::string::npos,
            what);
    }
  };
  refuses([] { engine::requireOpenVino("--runtime openvino"); }, "--runtime openvino");
  refuses([] { engine::writeOpenVinoIr({"a", ""}, "a.xml", {}); }, "--format openvino");
  refuses([] { engine::compileOpenVino({}, engine::Precision::kFp32, 32, "x"); },
          "--runtime openvino");
  std::printf(failures == 0 ? "ok: the stand-in refuses every use\n" : "%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
