// TensorBoard event files: the few protobuf fields of Event and Summary written by hand, each
// event framed as a TFRecord and appended whole.
#include "fixres/engine/EventFile.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "fixres/common/Crc32c.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"

namespace fixres::engine {
namespace {

constexpr const char* kFileVersion = "brain.Event:2";
constexpr int kSessionLogStart = 1;  // SessionLog.SessionStatus.START

// Protocol buffer wire types.
enum class Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void putKey(std::string& out, uint32_t field, Wire wire) {
  putVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(wire));
}

template <typename T>
void putLittleEndian(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

void putDouble(std::string& out, uint32_t field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  putKey(out, field, Wire::kFixed64);
  putLittleEndian(out, bits);
}

void putFloat(std::string& out, uint32_t field, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  putKey(out, field, Wire::kFixed32);
  putLittleEndian(out, bits);
}

void putBytes(std::string& out, uint32_t field, const std::string& bytes) {
  putKey(out, field, Wire::kLengthDelimited);
  putVarint(out, bytes.size());
  out += bytes;
}

// Event fields 1 (wall_time) and 2 (step), which every event starts with.
std::string eventHead(double wallTime, int64_t step) {
  std::string e;
  putDouble(e, 1, wallTime);
  if (step != 0) {  // proto3 leaves default values out
    putKey(e, 2, Wire::kVarint);
    putVarint(e, static_cast<uint64_t>(step));
  }
  return e;
}

std::string hostName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  std::string name = host;
  for (char& c : name)
    if (c == '/') c = '_';
  return name;
}

}  // namespace

std::string EventFile::newPath(const std::string& folder, double wallTime) {
  const std::string base = folder + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(std::floor(wallTime))) + "." +
                           hostName();
  std::string path = base;
  for (int n = 1; fileExists(path); ++n) path = base + "." + std::to_string(n);
  return path;
}

EventFile::EventFile(std::string path, double wallTime) : path_(std::move(path)) {
  fd_ =
      ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0666);
  FIXRES_CHECK(fd_ >= 0, OutputError, "cannot create ", path_, ": ", std::strerror(errno));
  writeRecord(versionEvent(wallTime));
}

EventFile::~EventFile() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFile::appendScalars(int64_t step, double wallTime, const std::vector<Scalar>& scalars) {
  if (!scalars.empty()) writeRecord(scalarEvent(wallTime, step, scalars));
}

void EventFile::appendRecord(const nlohmann::json& record, double wallTime) {
  if (!record.is_object() || !record.contains("step") || !record["step"].is_number_integer())
    return;
  appendScalars(record["step"].get<int64_t>(), wallTime, recordScalars(record));
}

void EventFile::appendRestart(int64_t step, double wallTime) {
  writeRecord(restartEvent(wallTime, step));
}

std::vector<Scalar> EventFile::recordScalars(const nlohmann::json& record) {
  std::vector<Scalar> out;
  if (!record.is_object()) return out;
  const auto phase = record.find("phase");
  const std::string suffix =
      phase != record.end() && phase->is_string() ? "_" + phase->get<std::string>() : "";
  for (const auto& [key, value] : record.items()) {
    if (key == "step" || key == "epoch" || key == "iteration") continue;
    if (value.is_number()) {
      out.push_back({"train/" + key, value.get<double>()});
    } else if (value.is_object()) {
      for (const auto& [name, inner] : value.items())
        if (inner.is_number()) out.push_back({key + suffix + "/" + name, inner.get<double>()});
    }
  }
  return out;
}

std::string EventFile::frameRecord(const std::string& data) {
  std::string length;
  putLittleEndian(length, static_cast<uint64_t>(data.size()));
  std::string out = length;
  putLittleEndian(out, maskedCrc32c(crc32c(length)));
  out += data;
  putLittleEndian(out, maskedCrc32c(crc32c(data)));
  return out;
}

std::string EventFile::scalarEvent(double wallTime, int64_t step,
                                   const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const Scalar& s : scalars) {
    std::string value;
    putBytes(value, 1, s.tag);
    putFloat(value, 2, static_cast<float>(s.value));
    putBytes(summary, 1, value);
  }
  std::string e = eventHead(wallTime, step);
  putBytes(e, 5, summary);
  return e;
}

std::string EventFile::versionEvent(double wallTime) {
  std::string e = eventHead(wallTime, 0);
  putBytes(e, 3, kFileVersion);
  return e;
}

std::string EventFile::restartEvent(double wallTime, int64_t step) {
  std::string sessionLog;
  putKey(sessionLog, 1, Wire::kVarint);
  putVarint(sessionLog, kSessionLogStart);
  std::string e = eventHead(wallTime, step);
  putBytes(e, 6, sessionLog);
  return e;
}

void EventFile::writeRecord(const std::string& data) {
  // TensorBoard stops reading a file at a broken record: keep whole records only.
  appendWhole(fd_, path_, frameRecord(data), "record");
}

double eventWallTimeNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace fixres::engine
