// --model-ema as a training-loop part (RunPart.h): the torchvision references' EMA weights
// (step/ModelEma.h) updated after every --model-ema-steps optimizer steps that were applied,
// evaluated after the run's weights (the log line's "EMA top-1", metrics.jsonl's eval_ema, the
// summary's EMA line), kept in checkpoints as model_ema.
#include "fixres/common/Log.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/step/ModelEma.h"
#include "fixres/train/RunPart.h"
#include "fixres/train/Trainer.h"

namespace fixres::engine {
namespace ema_part {

class EmaPart : public RunPart {
 public:
  EmaPart(const RunConfig& cfg, const RunServices& services) : services_(services) {
    EmaOptions eo = cfg.ema;
    eo.warmupEpochs = cfg.schedule.warmupEpochs;
    eo.adjustedDecay = adjustedEmaDecay(eo.decay, services.comm.worldSize(),
                                        static_cast<int64_t>(cfg.batch) * cfg.accumulationSteps,
                                        eo.steps, cfg.epochs);
    // Its values are replaced by the first update.
    ema_ = std::make_unique<ModelEma>(services.buildModel(), eo);
    log::info("EMA weights: decay ", eo.adjustedDecay, " (", eo.decay, " adjusted) every ",
              eo.steps, " steps");
  }
  const char* name() const override { return "the EMA weights"; }

  bool actsAfterStep(const RunMoment& at) const override {
    return (at.state.iteration - 1) % ema_->options().steps == 0;
  }
  void stepEnd(const RunMoment& at, models::Model& model, bool applied) override {
    if (!applied) return;
    updating_ = true;  // until the update is complete
    ema_->afterStep(*model, at.state.epoch, at.state.iteration - 1);
    updating_ = false;
  }

  void evaluated(const RunMoment&, Evaluation& e) override {
    // Each rank's average took its own BatchNorm statistics; rank 0's are the ones saved.
    if (services_.comm.worldSize() > 1) {
      std::vector<torch::Tensor> buffers;
      for (auto& b : ema_->model()->buffers()) buffers.push_back(b);
      distributed::GradReducer::broadcastFromRoot(services_.comm, buffers);
    }
    const EvalResult r = services_.evaluate(ema_->model());
    e.summary.afterEma = r;
    if (e.logLine)
      *e.logLine += detail::concat("; EMA top-1 ", r.top1, "  top-5 ", r.top5, "  loss ", r.loss);
    if (e.record) (*e.record)["eval_ema"] = r.toJson();
  }

  std::optional<CheckpointExtra> checkpointState() override { return ema_->checkpointState(); }
  bool consistent() const override { return !updating_; }

 private:
  RunServices services_;
  std::unique_ptr<ModelEma> ema_;
  bool updating_ = false;
};

}  // namespace ema_part

std::unique_ptr<RunPart> makeEmaPart(const RunConfig& config, const RunServices& services) {
  if (!config.ema.enabled) return nullptr;
  return std::make_unique<ema_part::EmaPart>(config, services);
}

}  // namespace fixres::engine
