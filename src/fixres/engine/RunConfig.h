// Everything a train / finetune run needs, resolved from defaults, config file and flags by
// the CLI, validated here, and saved as JSON beside the checkpoints.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "fixres/engine/Schedule.h"

namespace fixres::engine {

enum class RunMode { kTrain, kFinetune };

struct RunConfig {
  RunMode mode = RunMode::kTrain;
  // model
  std::string architecture = "resnet50";
  int64_t numClasses = 0;  // 0: the number of classes of the training set
  std::string weightPath;  // start from these weights (finetune: required)
  bool skipClassifier = false;
  // data
  std::string trainPath;                // image folder
  std::string valPath;                  // image folder (may be empty: no evaluation)
  int inputSize = 224;                  // train resolution (finetune: the test resolution)
  int evalSize = 0;                     // 0: inputSize
  std::string trainTransform = "full";  // full | torch | val | v2-train
  std::string resizeMode = "fixres";    // fixres | shorter (val transform)
  int batch = 64;                       // per process and micro-batch
  int accumulationSteps = 1;            // micro-batches per optimizer step
  int workers = 4;                      // loader threads per process
  bool skipBadImages = false;
  std::string sampler = "ra";  // ra (repeated augmentation) | distributed
  int repetitions = 3;
  double lenFactor = 2.0;
  int64_t iterationCap = -1;  // -1: FixRes cap 5005*512/total batch (train), none (finetune)
  // optimisation
  int epochs = 120;
  double learningRate = 0.02;
  bool absoluteLr = false;  // false: scale as 8 x lr x batch x processes / 512
  double momentum = 0.9;
  double weightDecay = 1e-4;
  bool nesterov = false;
  std::string lrSchedule = "step";
  int lrStep = 30;
  double lrGamma = 0.1;
  double warmupEpochs = 0;
  double labelSmoothing = 0;
  int evalEvery = 1;                  // evaluate every K epochs (and after the last)
  bool finetuneBnAffine = false;      // finetune: also train the last BN's weight and bias
  bool testFlip = false;              // evaluation: average logits with the flipped image
  std::string precision = "auto";     // auto (bf16 on CUDA, fp32 on CPU) | fp32 | bf16
  std::string memoryFormat = "auto";  // auto (channels-last on CUDA) | contiguous | channels-last
  std::string normalizeOn = "auto";   // auto (device on CUDA) | cpu | device: where uint8 -> float
  uint64_t seed = 0;
  int64_t stopAfterSteps = -1;  // stop (checkpointed) after this many optimizer steps in total
  // outputs
  std::string runDir;  // checkpoints, config.json, metrics.jsonl (rank 0 writes)
  int logEvery = 20;

  void validate() const;  // UsageError naming the option
  nlohmann::json toJson() const;
};

}  // namespace fixres::engine
