// The registry of optimizers: OptimizerList.h's entries, in its order.
#include "fixres/common/Error.h"
#include "fixres/optim/Optimizer.h"

namespace fixres::optim {

#define FIXRES_OPTIMIZER(f) const OptimizerDescriptor& f();
#include "fixres/optim/OptimizerList.h"
#undef FIXRES_OPTIMIZER

const std::vector<OptimizerKind>& optimizers() {
  static const std::vector<OptimizerKind> kAll = {
#define FIXRES_OPTIMIZER(f) &f(),
#include "fixres/optim/OptimizerList.h"
#undef FIXRES_OPTIMIZER
  };
  return kAll;
}

const ChoiceTable<OptimizerKind>& optimizerKinds() {
  static const ChoiceTable<OptimizerKind> kTable = [] {
    ChoiceTable<OptimizerKind> t{"optimizer", {}};
    for (OptimizerKind k : optimizers()) t.entries.emplace_back(k->name, k);
    return t;
  }();
  return kTable;
}

OptimizerKind optimizerNamed(const std::string& name) {
  for (OptimizerKind k : optimizers())
    if (name == k->name) return k;
  FIXRES_FAIL(InternalError, "no optimizer is named ", name);
}

std::map<std::string, double> optimizerParamDefaults() {
  std::map<std::string, double> out;
  for (OptimizerKind k : optimizers())
    for (const OptimizerParam& p : k->params) out[p.row.key] = p.value;
  return out;
}

const char* optimizersHelp() {
  static const std::string kHelp = [] {
    std::string s = "Optimizer: ";
    for (OptimizerKind k : optimizers())
      s += std::string(k == optimizers().front() ? "" : "; ") + k->help;
    return s;
  }();
  return kHelp.c_str();
}

}  // namespace fixres::optim
