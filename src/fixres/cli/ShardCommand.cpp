// `fixres shard`: an image folder (or shards) -> shuffled tar shards in the WebDataset layout,
// with their index (data/ShardWriter.h).
#include <algorithm>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/ShardWriter.h"

namespace fixres::cli {

Command addShardCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "shard", "Write an image folder as shuffled tar shards (WebDataset layout) with an index");
  struct State {
    std::string datasetPath;
    data::ShardWriteOptions write;
    double shardMb = 256;
    int64_t seed = 0;
  };
  auto s = std::make_shared<State>();
  addShared(*sub, "--dataset-path", s->datasetPath)->required();
  addShared(*sub, "--out", s->write.outDir)->required();
  sub->add_option("--shard-size", s->shardMb,
                  "Close a shard once it holds this many MB (10^6 bytes; fractions allowed); each "
                  "holds at least one sample")
      ->check(finiteIn(0, 1e6, /*openLow=*/true))
      ->capture_default_str();
  addShared(*sub, "--seed", s->seed);
  return {sub, [s]() -> int {
            checkOutputPath("--out", s->write.outDir, {{"--dataset-path", s->datasetPath}});
            s->write.shardBytes = std::max<uint64_t>(1, static_cast<uint64_t>(s->shardMb * 1e6));
            s->write.seed = static_cast<uint64_t>(s->seed);
            auto dataset = data::openDataset(s->datasetPath);
            installStopHandlers();  // Ctrl-C removes what was written
            const auto r = data::writeShards(*dataset, s->write);
            if (r.stopSignal != 0) {
              log::warn("shard: stopped by ", stopSignalName(r.stopSignal), ", nothing written to ",
                        s->write.outDir);
              return 128 + r.stopSignal;
            }
            std::cout << "wrote " << r.samples << " samples in " << r.shards << " shard(s), "
                      << dataset->classes().size() << " classes -> " << s->write.outDir
                      << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli
