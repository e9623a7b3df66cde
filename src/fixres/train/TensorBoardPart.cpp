// The run's TensorBoard event file (train/EventFile.h) as a training-loop part (RunPart.h): made
// by rank 0 when the run folder is opened (a resumed run's file begins with the restart step, so
// TensorBoard drops the older files' points past the checkpoint), then given every metrics.jsonl
// record as scalars. On unless --tensorboard off.
#include "fixres/engine/RunConfig.h"
#include "fixres/train/EventFile.h"
#include "fixres/train/RunPart.h"

namespace fixres::engine {
namespace tensorboard_part {

class TensorBoardPart : public RunPart {
 public:
  const char* name() const override { return "the TensorBoard event file"; }

  void opened(const RunMoment& at, bool resumed) override {
    if (at.rank != 0) return;
    const double now = eventWallTimeNow();
    events_ = std::make_unique<EventFile>(EventFile::newPath(at.runDir, now), now);
    if (resumed) events_->appendRestart(at.state.globalStep + 1, now);
  }

  void recorded(const RunMoment&, const nlohmann::json& record) override {
    if (events_) events_->appendRecord(record, eventWallTimeNow());
  }

 private:
  std::unique_ptr<EventFile> events_;  // rank 0
};

}  // namespace tensorboard_part

std::unique_ptr<RunPart> makeTensorBoardPart(const RunConfig& config, const RunServices&) {
  if (!config.tensorboard) return nullptr;
  return std::make_unique<tensorboard_part::TensorBoardPart>();
}

}  // namespace fixres::engine
