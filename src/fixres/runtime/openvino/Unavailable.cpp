// A build without OpenVINO: the runtime is named and refused (OpenVinoSession.h).
#include "fixres/common/Error.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {

void requireOpenVino(const std::string& what) {
  FIXRES_FAIL(UsageError, what,
              ": this build has no OpenVINO runtime (make torch2-env installs OpenVINO; "
              "reconfigure the build to find it)");
}

bool openVinoBuiltIn() {
  return false;
}
std::string openVinoVersion() {
  return "";
}
bool openVinoSupports(Precision) {
  return false;
}

std::unique_ptr<OpenVinoSession> compileOpenVino(const OnnxSource&, Precision, int,
                                                 const std::string&) {
  requireOpenVino("--runtime openvino");
  return nullptr;
}

void writeOpenVinoIr(const OnnxSource&, const std::string&,
                     const std::map<std::string, std::string>&) {
  requireOpenVino("--format openvino");
}

}  // namespace fixres::engine
