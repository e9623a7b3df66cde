// The sweep's further evaluation sets (--eval-set): parsing, each cell's top-1 and ECE on them,
// and the rule that keeps the choice from losing more than --max-shift-loss points on any.
#include <cctype>
#include <cmath>
#include <set>

#include "fixres/common/Error.h"
#include "fixres/engine/EvalReport.h"
#include "fixres/runtime/Metrics.h"
#include "fixres/sweep/Sweep.h"

namespace fixres::engine {

std::vector<EvalSetSpec> parseEvalSets(const std::vector<std::string>& entries) {
  std::vector<EvalSetSpec> out;
  std::set<std::string> names;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    FIXRES_CHECK(eq != std::string::npos && eq + 1 < e.size(), UsageError, "--eval-set '",
                 oneLine(e), "': expected NAME=PATH");
    EvalSetSpec s{e.substr(0, eq), e.substr(eq + 1)};
    bool ok = !s.name.empty() && s.name.size() <= 64;
    for (unsigned char c : s.name) ok = ok && (std::isalnum(c) || c == '_' || c == '-' || c == '.');
    FIXRES_CHECK(ok, UsageError, "--eval-set '", oneLine(e),
                 "': a name is 1-64 letters, digits, '_', '-' or '.'");
    FIXRES_CHECK(names.insert(s.name).second, UsageError, "--eval-set: the name '", s.name,
                 "' is given twice");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SetScore> scoreEvalSets(models::Model& model, const std::vector<SweepSetData>& sets,
                                    const EvalOptions& options, distributed::Communicator& comm) {
  std::vector<SetScore> out;
  for (const SweepSetData& set : sets) {
    const Extraction x = extract(model, set.dataset, options, comm, /*embeddings=*/false);
    std::vector<torch::Tensor> t{torch::zeros({3}, torch::kDouble)};
    if (comm.rank() == 0 && x.labels.numel() > 0) {
      // top-1 by evaluate's own rule (Metrics.h), ties included
      const auto right = static_cast<double>(correctInTopK(x.logits, x.labels, 1));
      const double n = static_cast<double>(x.labels.numel());
      t[0][0] = 100.0 * right / n;
      t[0][1] = 100.0 * reliability(x.logits, x.labels).ece;
      t[0][2] = n;
    }
    t[0] = t[0].to(comm.device());
    comm.broadcast(t, 0);
    const auto v = t[0].cpu();
    SetScore s;
    s.count = static_cast<int64_t>(v[2].item<double>());
    if (s.count > 0) {
      s.top1 = v[0].item<double>();
      s.ece = v[1].item<double>();
    }
    out.push_back(s);
  }
  return out;
}

void markShiftRule(std::vector<SweepRow>& rows, size_t baseline, const SweepOptions& o) {
  if (o.maxShiftLoss <= 0) return;
  const auto scores = [&](const SweepRow& r) -> const std::vector<SetScore>& {
    return o.finetune ? r.setsFinetuned : r.sets;
  };
  const std::vector<SetScore> base = scores(rows.at(baseline));
  for (SweepRow& r : rows) {
    r.shiftOk = true;
    for (size_t k = 0; k < base.size(); ++k)
      r.shiftOk = r.shiftOk && scores(r).at(k).top1 >= base[k].top1 - o.maxShiftLoss;
  }
}

nlohmann::json evalSetsJson(const SweepOptions& o, const SweepResult& result, const SweepRow& r) {
  nlohmann::json sets = nlohmann::json::object();
  const SweepRow* base = result.shiftBaseline ? &result.rows[*result.shiftBaseline] : nullptr;
  const auto number = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
  };
  for (size_t k = 0; k < o.evalSets.size(); ++k) {
    nlohmann::json s = {
        {"top1", number(r.sets[k].top1)},
        {"ece", number(r.sets[k].ece)},
        {"images", r.sets[k].count},
        {"top1_change", base ? number(r.sets[k].top1 - base->sets[k].top1) : nlohmann::json()}};
    if (o.finetune) {
      s["top1_finetuned"] = number(r.setsFinetuned[k].top1);
      s["ece_finetuned"] = number(r.setsFinetuned[k].ece);
      s["top1_change_finetuned"] =
          base ? number(r.setsFinetuned[k].top1 - base->setsFinetuned[k].top1) : nlohmann::json();
    }
    sets[o.evalSets[k].name] = s;
  }
  return sets;
}

}  // namespace fixres::engine
