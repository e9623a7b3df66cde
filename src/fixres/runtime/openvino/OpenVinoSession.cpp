// OpenVINO's C++ API behind OpenVinoSession.h: one ov::Core for the process, models read from
// ONNX bytes in memory, compiled for the CPU (one stream, the latency hint), run with the caller's
// tensor as input (no copy) and outputs copied into tensors of their own.
#include <openvino/openvino.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "fixres/common/Error.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {
namespace {

ov::Core& core() {
  static ov::Core c;
  return c;
}

std::string firstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "unknown error" : line;
}

ov::element::Type elementType(Precision p) {
  FIXRES_CHECK(p != Precision::kFp16, InternalError, "OpenVINO asked for fp16");
  return p == Precision::kBf16 ? ov::element::bf16 : ov::element::f32;
}

std::shared_ptr<ov::Model> readModel(const OnnxSource& onnx, const std::string& what) {
  try {
    if (!onnx.path.empty()) return core().read_model(onnx.path);
    return core().read_model(onnx.bytes, ov::Tensor());
  } catch (const std::exception& e) {
    FIXRES_FAIL(WeightsError, "OpenVINO cannot read ", what, ": ", firstLine(e.what()));
  }
}

class Session final : public OpenVinoSession {
 public:
  explicit Session(ov::CompiledModel compiled)
      : compiled_(std::move(compiled)), request_(compiled_.create_infer_request()) {}

  std::vector<torch::Tensor> run(const torch::Tensor& x) override {
    const torch::Tensor in = x.to(torch::kFloat).contiguous();
    ov::Shape shape(in.sizes().begin(), in.sizes().end());
    request_.set_input_tensor(ov::Tensor(ov::element::f32, shape, in.data_ptr<float>()));
    request_.infer();
    std::vector<torch::Tensor> outputs;
    for (size_t i = 0; i < compiled_.outputs().size(); ++i) {
      const ov::Tensor out = request_.get_output_tensor(i);
      const ov::Shape s = out.get_shape();
      torch::Tensor t = torch::empty(std::vector<int64_t>(s.begin(), s.end()), torch::kFloat);
      FIXRES_CHECK(out.get_element_type() == ov::element::f32, InternalError, "OpenVINO returned ",
                   out.get_element_type().get_type_name(), " output ", i);
      std::memcpy(t.data_ptr<float>(), out.data<const float>(), out.get_byte_size());
      outputs.push_back(std::move(t));
    }
    return outputs;
  }

 private:
  ov::CompiledModel compiled_;
  ov::InferRequest request_;
};

}  // namespace

void requireOpenVino(const std::string&) {}

bool openVinoBuiltIn() {
  return true;
}

std::string openVinoVersion() {
  const std::string build = ov::get_openvino_version().buildNumber;  // "2026.4.0-22959-..."
  return build.substr(0, build.find('-'));
}

bool openVinoSupports(Precision precision) {
  if (precision == Precision::kFp32) return true;
  if (precision != Precision::kBf16) return false;
  static const bool bf16 = [] {
    const auto caps = core().get_property("CPU", ov::device::capabilities);
    return std::find(caps.begin(), caps.end(), ov::device::capability::BF16) != caps.end();
  }();
  return bf16;
}

std::unique_ptr<OpenVinoSession> compileOpenVino(const OnnxSource& onnx, Precision precision,
                                                 int threads, const std::string& what) {
  const ov::element::Type type = elementType(precision);
  FIXRES_CHECK(openVinoSupports(precision), InternalError,
               "OpenVINO asked for bf16 on a CPU without it");
  auto model = readModel(onnx, what);
  try {
    ov::CompiledModel compiled = core().compile_model(
        model, "CPU", ov::hint::inference_precision(type), ov::inference_num_threads(threads),
        ov::hint::performance_mode(ov::hint::PerformanceMode::LATENCY), ov::num_streams(1));
    return std::make_unique<Session>(std::move(compiled));
  } catch (const std::exception& e) {
    FIXRES_FAIL(WeightsError, "OpenVINO cannot compile ", what, ": ", firstLine(e.what()));
  }
}

void writeOpenVinoIr(const OnnxSource& onnx, const std::string& xmlPath,
                     const std::map<std::string, std::string>& info) {
  auto model = readModel(onnx, xmlPath);
  for (const auto& [key, value] : info) model->set_rt_info(value, "fixres", key);
  namespace fs = std::filesystem;
  const fs::path xml(xmlPath), bin = fs::path(xmlPath).replace_extension(".bin");
  // Written under temporary names beside the outputs, then renamed: the .bin first, so that an
  // .xml is never seen without the weights it was written with.
  const fs::path tmpXml = xml.string() + ".tmp.xml", tmpBin = xml.string() + ".tmp.bin";
  std::error_code ignored;
  try {
    ov::save_model(model, tmpXml.string(), /*compress_to_fp16=*/false);
  } catch (const std::exception& e) {
    fs::remove(tmpXml, ignored);
    fs::remove(tmpBin, ignored);
    FIXRES_FAIL(OutputError, "cannot write ", xmlPath, ": ", firstLine(e.what()));
  }
  std::error_code ec;
  fs::rename(tmpBin, bin, ec);
  if (!ec) fs::rename(tmpXml, xml, ec);
  if (ec) {
    fs::remove(tmpXml, ignored);
    fs::remove(tmpBin, ignored);
    FIXRES_FAIL(OutputError, "cannot write ", xmlPath, ": ", ec.message());
  }
}

}  // namespace fixres::engine
