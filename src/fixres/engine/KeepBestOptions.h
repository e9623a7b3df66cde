// --checkpoint-hist N: keep the N best epoch checkpoints by held-out top-1 (timm's
// CheckpointSaver), the others removed as they fall out; the kept ones listed with their metrics
// in best_checkpoints.json, which a resumed or restarted run reads back. A RunPart (RunPart.h).
#pragma once

#include "fixres/common/Setting.h"

namespace fixres::engine {

struct KeepBestOptions {
  int checkpointHist = 0;  // 0: every epoch's checkpoint is kept

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    v(Setting{"checkpoint_hist", "--checkpoint-hist", "Optimisation",
              "Keep only the N best epoch checkpoints (checkpoint_<epoch>.pth) by top-1 on the "
              "held-out set, listed with their metrics in best_checkpoints.json, best first; "
              "epochs not evaluated keep none (0: keep every epoch's)",
              Range::integers(0), SettingRole::kNotCompared},
      o.checkpointHist);
  }
};

}  // namespace fixres::engine
