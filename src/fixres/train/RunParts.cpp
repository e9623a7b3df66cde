// The training-loop parts (RunPart.h), one line each: a part's maker returns nullptr when the
// run's configuration leaves it off.
#include "fixres/engine/RunConfig.h"
#include "fixres/train/RunPart.h"

namespace fixres::engine {

std::unique_ptr<RunPart> makeEmaPart(const RunConfig&, const RunServices&);   // EmaPart.cpp
std::unique_ptr<RunPart> makeKeepBest(const RunConfig&, const RunServices&);  // KeepBest.cpp
std::unique_ptr<RunPart> makeTensorBoardPart(const RunConfig&,
                                             const RunServices&);  // TensorBoardPart.cpp

std::vector<std::unique_ptr<RunPart>> makeRunParts(const RunConfig& config,
                                                   const RunServices& services) {
  std::vector<std::unique_ptr<RunPart>> parts;
  for (auto make : {makeEmaPart, makeKeepBest, makeTensorBoardPart})
    if (auto part = make(config, services)) parts.push_back(std::move(part));
  return parts;
}

}  // namespace fixres::engine
