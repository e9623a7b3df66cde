// TensorBoard event files: the few protobuf fields of Event and Summary written by hand, each
// event framed as a TFRecord and appended whole.
#include "fixres/train/EventFile.h"

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
#include "fixres/common/ProtoWire.h"

namespace fixres::engine {
namespace {

constexpr const char* kFileVersion = "brain.Event:2";
constexpr int kSessionLogStart = 1;  // SessionLog.SessionStatus.START

// Event fields 1 (wall_time) and 2 (step), which every event starts with.
proto::Bytes eventHead(double wallTime, int64_t step) {
  proto::Bytes e;
  proto::doubleField(e, 1, wallTime);
  if (step != 0) proto::intField(e, 2, step);  // proto3 leaves default values out
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
  proto::Bytes length, out;
  proto::littleEndian(length, static_cast<uint64_t>(data.size()));
  out.data = length.data;
  proto::littleEndian(out, maskedCrc32c(crc32c(length.data)));
  out.data += data;
  proto::littleEndian(out, maskedCrc32c(crc32c(data)));
  return out.data;
}

std::string EventFile::scalarEvent(double wallTime, int64_t step,
                                   const std::vector<Scalar>& scalars) {
  proto::Bytes e = eventHead(wallTime, step);
  proto::messageField(e, 5, [&](auto& summary) {
    for (const Scalar& s : scalars)
      proto::messageField(summary, 1, [&](auto& value) {
        proto::bytesField(value, 1, s.tag);
        proto::floatField(value, 2, static_cast<float>(s.value));
      });
  });
  return e.data;
}

std::string EventFile::versionEvent(double wallTime) {
  proto::Bytes e = eventHead(wallTime, 0);
  proto::bytesField(e, 3, kFileVersion);
  return e.data;
}

std::string EventFile::restartEvent(double wallTime, int64_t step) {
  proto::Bytes e = eventHead(wallTime, step);
  proto::messageField(e, 6,
                      [](auto& sessionLog) { proto::intField(sessionLog, 1, kSessionLogStart); });
  return e.data;
}

void EventFile::writeRecord(const std::string& data) {
  // TensorBoard stops reading a file at a broken record: keep whole records only.
  appendWhole(fd_, path_, frameRecord(data), "record");
}

double eventWallTimeNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace fixres::engine
