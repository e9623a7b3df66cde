// Top-k predictions over extract's ordered gather, with the bad images' errors recovered.
#include "fixres/engine/Predict.h"

#include <nlohmann/json.hpp>

#include "fixres/common/CsvText.h"
#include "fixres/common/Error.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/NumberText.h"
#include "fixres/image/Decode.h"

namespace fixres::engine {
namespace {

// Why image i could not be used: the error its reading or decoding raises again.
std::string badImageError(const data::Dataset& images, size_t i) {
  try {
    auto sample = images.fetch(i);
    if (!sample.isDecoded) image::decodeImage(sample.data(), sample.size(), sample.name);
  } catch (const std::exception& e) {
    return oneLine(e.what());
  }
  return images.name(i) + ": could not be transformed";
}

}  // namespace

const ChoiceTable<ScoreKind>& scoreKinds() {
  static const ChoiceTable<ScoreKind> kTable = {
      "output type", {{"prob", ScoreKind::kProb}, {"logit", ScoreKind::kLogit}}};
  return kTable;
}

const ChoiceTable<PredictFormat>& predictFormats() {
  static const ChoiceTable<PredictFormat> kTable = {"output format",
                                                    {{"csv", PredictFormat::kCsv},
                                                     {"json", PredictFormat::kJson},
                                                     {"jsonl", PredictFormat::kJsonl}}};
  return kTable;
}

std::vector<PredictRow> predict(models::Model& model, std::shared_ptr<const data::Dataset> images,
                                const EvalOptions& options, const PredictOptions& predictOptions,
                                distributed::Communicator& comm) {
  const int topk = predictOptions.topk;
  FIXRES_CHECK(topk >= 1, UsageError, "--topk must be at least 1, got ", topk);
  EvalOptions o = options;
  o.skipBadImages = true;
  auto ex = extract(model, images, o, comm);
  std::vector<PredictRow> rows;
  if (comm.rank() != 0) return rows;
  // The softmax extract writes (<arch>_softmax.npy): float64, then float32.
  const auto probs = torch::softmax(ex.logits.to(torch::kFloat64), 1).to(torch::kFloat32);
  auto scores = predictOptions.scores == ScoreKind::kProb ? probs : ex.logits;
  const int64_t k = std::min<int64_t>(topk, scores.size(1));
  auto [values, classes] = scores.topk(k, 1);
  values = values.contiguous();
  classes = classes.contiguous();
  // How many of each row's best classes reach --min-prob (the best come first).
  const auto listed = (probs.gather(1, classes) >= predictOptions.minProb).sum(1).contiguous();
  rows.resize(images->size());
  std::vector<bool> present(images->size(), false);
  const auto* idx = ex.indices.data_ptr<int64_t>();
  for (int64_t r = 0; r < ex.indices.size(0); ++r) {
    PredictRow& row = rows[idx[r]];
    present[idx[r]] = true;
    const auto* c = classes[r].data_ptr<int64_t>();
    const auto* v = values[r].data_ptr<float>();
    const int64_t n = listed.data_ptr<int64_t>()[r];
    row.classes.assign(c, c + n);
    row.scores.assign(v, v + n);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].path = images->name(i);
    if (!present[i]) rows[i].error = badImageError(*images, i);
  }
  return rows;
}

std::string formatPredictions(const std::vector<PredictRow>& rows,
                              const std::vector<std::string>& classNames, int64_t classCount,
                              const PredictOptions& options) {
  const PredictFormat format = options.format;
  const std::string score = choiceName(scoreKinds(), options.scores);
  const auto className = [&](int64_t c) {
    return c < static_cast<int64_t>(classNames.size()) ? classNames[c] : std::to_string(c);
  };
  std::string out;
  if (format == PredictFormat::kCsv) {
    // min(--topk, classes) top columns, whatever the rows hold (--min-prob's cut, bad images).
    const int k = static_cast<int>(std::min<int64_t>(options.topk, classCount));
    out = "path";
    for (int j = 1; j <= k; ++j) {
      const std::string t = "top" + std::to_string(j);
      out += "," + t + "_index," + t + "_class," + t + "_" + score;
    }
    out += ",error\n";
    for (const auto& r : rows) {
      out += csvField(r.path);
      for (int j = 0; j < k; ++j) {
        if (j < static_cast<int>(r.classes.size()))
          out += "," + std::to_string(r.classes[j]) + "," + csvField(className(r.classes[j])) +
                 "," + shortestText(r.scores[j]);
        else
          out += ",,,";
      }
      out += "," + csvField(r.error) + "\n";
    }
    return out;
  }
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json preds = nlohmann::ordered_json::array();
    for (size_t j = 0; j < r.classes.size(); ++j)
      preds.push_back({{"index", r.classes[j]},
                       {"class", className(r.classes[j])},
                       {score, shortestDouble(r.scores[j])}});
    nlohmann::ordered_json row = {{"path", r.path}, {"predictions", preds}};
    row["error"] = r.error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.error);
    if (format == PredictFormat::kJsonl)
      out += jsonText(row) + "\n";
    else
      all.push_back(row);
  }
  return format == PredictFormat::kJson ? jsonText(all, 2) + "\n" : out;
}

}  // namespace fixres::engine
