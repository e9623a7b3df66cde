// `fixres weights list` (the catalogue of published weights) and `fixres weights fetch NAME|URL`
// (into the cache, printing the local path; --refresh downloads it again).
#include <cstdio>
#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/common/Download.h"
#include "fixres/common/Error.h"
#include "fixres/models/Catalogue.h"
#include "fixres/weights/WeightCache.h"

namespace fixres::cli {
namespace {

Command addWeightsList(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "list",
      "The published weights --pretrained takes: name, architecture, train and test "
      "resolution, published top-1, checksum, URL");
  return {sub, []() -> int {
            std::printf("%-26s %-24s %5s %5s %6s %-16s %s\n", "name", "architecture", "train",
                        "test", "top1", "sha256", "url");
            for (const auto& w : models::catalogue()) {
              char top1[16] = "-";
              if (w.top1 >= 0) std::snprintf(top1, sizeof(top1), "%.1f", w.top1);
              const std::string sha = w.sha256.empty()        ? "none"
                                      : w.sha256.size() == 64 ? w.sha256.substr(0, 16) + "..."
                                                              : w.sha256 + "...";
              std::printf("%-26s %-24s %5d %5d %6s %-16s %s\n", w.name.c_str(),
                          w.architecture.c_str(), w.trainSize, w.testSize, top1, sha.c_str(),
                          w.url.c_str());
            }
            return 0;
          }};
}

Command addWeightsFetch(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "fetch",
      "Fetch published weights (a --pretrained name) or a URL into the cache; print the "
      "local path");
  struct State {
    std::string what;
    DownloadOptions download;
  };
  auto s = std::make_shared<State>();
  bindSetting(*sub, models::kFetchWhatRow, s->what)->required();
  bindSetting(*sub, models::kRefreshRow, s->download.refresh);
  addDownloadOptions(*sub, s->download);
  return {sub, [s]() -> int {
            RemoteFile file;
            if (isRemoteFile(s->what)) {
              file = parseRemoteFile(s->what);
            } else {
              const auto& w = models::publishedWeights(s->what);
              file = {w.url, w.sha256};
            }
            std::cout << models::fetchWeightFile(file, s->download) << std::endl;
            return 0;
          }};
}

}  // namespace

Command addWeightsCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand("weights", "Published weights: list the catalogue, fetch");
  sub->require_subcommand(1);
  std::vector<Command> subs = {addWeightsList(*sub), addWeightsFetch(*sub)};
  return {sub, [subs]() -> int {
            for (const auto& c : subs)
              if (c.app->parsed()) return c.run();
            FIXRES_FAIL(UsageError, "weights needs a subcommand: list or fetch");
          }};
}

}  // namespace fixres::cli
