// Whole-line appends and the resume rewrite of metrics.jsonl.
#include "fixres/engine/MetricsLog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/Log.h"

namespace fixres::engine {

MetricsLog::MetricsLog(std::string path, std::optional<Position> resumeAt)
    : path_(std::move(path)) {
  std::string kept;
  if (resumeAt && fileExists(path_)) {
    const std::string text = readRegularFile<DataError>(path_, kMetricsLogMaxBytes, "metrics log");
    size_t dropped = 0;
    kept = keptRecords(text, *resumeAt, dropped);
    if (dropped > 0)
      log::info(path_, ": ", dropped, " line(s) after step ", resumeAt->globalStep,
                " (the checkpoint's) or not whole dropped");
  }
  writeFileAtomic(path_, kept);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  FIXRES_CHECK(fd_ >= 0, OutputError, "cannot open ", path_, ": ", std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(const nlohmann::json& record) {
  const std::string line = jsonText(roundedNumbers(record)) + "\n";
  // A part of the line that went in before a write failed is cut off: the file keeps whole lines.
  appendWhole(fd_, path_, line, "line");
}

std::string MetricsLog::keptRecords(const std::string& text, Position at, size_t& dropped) {
  std::string out;
  dropped = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t newline = text.find('\n', begin);
    if (newline == std::string::npos) {  // a part of a line: the last write did not finish
      ++dropped;
      break;
    }
    const std::string line = text.substr(begin, newline - begin);
    begin = newline + 1;
    nlohmann::json record;
    std::string why;
    if (!parseJsonInput(line, &record, &why))
      record = nlohmann::json(nlohmann::json::value_t::discarded);
    bool keep = record.is_object();
    if (keep && (record.contains("eval") || record.contains("train")) && record.contains("epoch")) {
      keep = record["epoch"].is_number_integer() && record["epoch"].get<int64_t>() <= at.epochsDone;
    } else if (keep && record.contains("step")) {
      keep = record["step"].is_number_integer() && record["step"].get<int64_t>() <= at.globalStep;
    }
    if (keep) {
      out += line + "\n";
    } else if (!line.empty()) {
      ++dropped;
    }
  }
  return out;
}

}  // namespace fixres::engine
