// The settings rows (common/Setting.h) against the config.json format and the CLI: every key and
// flag declared once; the keys are exactly those of the config.json format (each earlier key
// kept, so old files resume); the run-defining keys are the ones resume has always refused; and
// every numeric row's range is what the CLI enforces while parsing, on both sides of each bound,
// for train and finetune alike.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/common/Error.h"
#include "fixres/common/Setting.h"
#include "fixres/engine/RunConfig.h"

namespace fixres::cli {
namespace {

struct Row {
  Setting setting;
  bool numeric = false;
  bool boolean = false;
};

struct Collect {
  std::vector<Row>& rows;
  template <typename T>
  void operator()(const Setting& s, const T&) {
    rows.push_back(
        {s, std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, std::is_same_v<T, bool>});
  }
  template <typename T>
  void operator()(const Setting& s, const std::optional<T>&) {
    rows.push_back({s, true, false});
  }
  template <typename T, typename E>
  void operator()(const Setting& s, const T&, const ChoiceTable<E>&) {
    rows.push_back({s, false, false});
  }
};

std::vector<Row> runRows(engine::RunMode mode) {
  std::vector<Row> rows;
  const auto config = engine::RunConfig::forMode(mode);
  engine::RunConfig::visitSettings(config, Collect{rows});
  return rows;
}

// config.json's keys as fixres has written them (the 0.1.0 files' keys and those added since):
// the file format, stated here independently of the rows.
const std::set<std::string> kConfigKeys = {"absolute_lr",
                                           "img_size",
                                           "dynamic_img_size",
                                           "finetune_scope",
                                           "layer_decay",
                                           "accumulation_steps",
                                           "architecture",
                                           "augmix_severity",
                                           "auto_augment",
                                           "batch",
                                           "bias_weight_decay",
                                           "bucket_mb",
                                           "checkpoint_every_steps",
                                           "checkpoint_hist",
                                           "clip_grad_norm",
                                           "cuda_graph",
                                           "cutmix_alpha",
                                           "decode_on",
                                           "drop_path_rate",
                                           "drop_rate",
                                           "efficientnet_model",
                                           "end_ramp",
                                           "epochs",
                                           "eval_every",
                                           "eval_size",
                                           "finetune_bn_affine",
                                           "grad_compression",
                                           "input_size",
                                           "interpolation",
                                           "iteration_cap",
                                           "label_smoothing",
                                           "lamb_beta1",
                                           "lamb_beta2",
                                           "lars_trust_coeff",
                                           "learning_rate",
                                           "lr_gamma",
                                           "lr_min",
                                           "lr_schedule",
                                           "lr_step",
                                           "max_res",
                                           "mean",
                                           "memory_format",
                                           "min_res",
                                           "mixup_alpha",
                                           "mode",
                                           "model_ema",
                                           "model_ema_decay",
                                           "model_ema_steps",
                                           "momentum",
                                           "nan_policy",
                                           "nesterov",
                                           "norm_weight_decay",
                                           "normalize_on",
                                           "num_classes",
                                           "opt",
                                           "optimizer_impl",
                                           "precision",
                                           "ra_magnitude",
                                           "random_erase",
                                           "repetitions",
                                           "resize_mode",
                                           "run_dir",
                                           "sampler",
                                           "seed",
                                           "skip_bad_images",
                                           "skip_classifier",
                                           "skip_on",
                                           "start_ramp",
                                           "std",
                                           "stop_after_steps",
                                           "sync_bn",
                                           "test_flip",
                                           "train_path",
                                           "train_transform",
                                           "use_ema",
                                           "val_path",
                                           "warmup_epochs",
                                           "weight_decay",
                                           "weight_path",
                                           "workers"};

// What resume has refused to change since it compared settings.
const std::set<std::string> kDefinesRun = {"mode",
                                           "architecture",
                                           "efficientnet_model",
                                           "num_classes",
                                           "train_path",
                                           "input_size",
                                           "min_res",
                                           "max_res",
                                           "start_ramp",
                                           "end_ramp",
                                           "train_transform",
                                           "auto_augment",
                                           "ra_magnitude",
                                           "augmix_severity",
                                           "random_erase",
                                           "batch",
                                           "accumulation_steps",
                                           "sampler",
                                           "repetitions",
                                           "iteration_cap",
                                           "opt",
                                           "seed"};

TEST(SettingsTable, EveryKeyAndFlagIsDeclaredOnce) {
  std::set<std::string> keys, flags;
  for (const Row& r : runRows(engine::RunMode::kTrain)) {
    if (r.setting.saved()) EXPECT_TRUE(keys.insert(r.setting.key).second) << r.setting.key;
    std::stringstream ss(r.setting.flags);
    std::string n;
    while (std::getline(ss, n, ',')) EXPECT_TRUE(flags.insert(n).second) << n;
    EXPECT_NE(r.setting.help[0], '\0') << r.setting.key;
    if (r.setting.flags[0] != '\0') EXPECT_NE(r.setting.group[0], '\0') << r.setting.flags;
  }
  EXPECT_EQ(keys, kConfigKeys);
}

TEST(SettingsTable, TheRolesAreThoseResumeHasAlwaysApplied) {
  std::set<std::string> defines, notCompared;
  for (const Row& r : runRows(engine::RunMode::kTrain)) {
    if (r.setting.role == SettingRole::kDefinesRun) defines.insert(r.setting.key);
    if (r.setting.role == SettingRole::kNotCompared) notCompared.insert(r.setting.key);
  }
  EXPECT_EQ(defines, kDefinesRun);
  EXPECT_EQ(notCompared, (std::set<std::string>{"run_dir", "stop_after_steps",
                                                "checkpoint_every_steps", "checkpoint_hist"}));
  // The rows say it, resumeChanges does it: a changed run-defining key is flagged.
  auto before = engine::RunConfig::forMode(engine::RunMode::kTrain);
  auto after = before;
  after.repetitions = 2;
  after.step.momentum = 0.8;
  const auto changes = engine::resumeChanges(before.toJson(), after);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].key, "momentum");
  EXPECT_FALSE(changes[0].definesRun);
  EXPECT_EQ(changes[1].key, "repetitions");
  EXPECT_TRUE(changes[1].definesRun);
}

std::string number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Parses `fixres <command> --imnet-path d [--weight-path w] <flag>=<value>`; "" when accepted,
// else the error.
std::string parse(const std::string& command, const std::string& flag, const std::string& value) {
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  try {
    app.parse(command + " --imnet-path d --weight-path w " + flag + "=" + value, false);
    return "";
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
}

// Every numeric row a subcommand offers: its range's bounds (and the special value) are
// accepted, a value just outside each bound is refused, naming the flag and the value.
TEST(SettingsTable, TheCliEnforcesEachRowsRange) {
  int checked = 0;
  for (auto mode : {engine::RunMode::kTrain, engine::RunMode::kFinetune}) {
    const std::string command = mode == engine::RunMode::kTrain ? "train" : "finetune";
    for (const Row& r : runRows(mode)) {
      const Setting& s = r.setting;
      const bool offered = s.offeredTo(command);
      if (!offered || !r.numeric || s.range.kind == Range::Kind::kAny) continue;
      SCOPED_TRACE(command + " " + s.flag());
      const double step = s.range.kind == Range::Kind::kInteger ? 1 : 1e-3;
      std::vector<double> good, bad;
      if (!s.range.loOpen) good.push_back(s.range.lo);
      bad.push_back(s.range.loOpen ? s.range.lo : s.range.lo - step);
      if (std::isinf(s.range.hi)) {
        good.push_back(s.range.lo + 1);
      } else {
        if (!s.range.hiOpen) good.push_back(s.range.hi);
        bad.push_back(s.range.hiOpen ? s.range.hi : s.range.hi + step);
      }
      if (s.range.hasSpecial) good.push_back(s.range.special);
      // A value that cross-checks refuse for another reason (progressive resizing, --nesterov)
      // is not this test's concern: only the range's own message is looked for.
      for (double v : good) {
        const std::string e = parse(command, s.flag(), number(v));
        EXPECT_EQ(e.find(s.flag() + ": must be"), std::string::npos) << v << ": " << e;
      }
      for (double v : bad) {
        if (s.range.hasSpecial && v == s.range.special) continue;
        const std::string e = parse(command, s.flag(), number(v));
        EXPECT_EQ(e.rfind(s.flag() + ": must be " + s.range.describe(), 0), 0u) << v << ": " << e;
        EXPECT_NE(e.find("got '" + number(v) + "'"), std::string::npos) << e;
        ++checked;
      }
      if (s.range.kind == Range::Kind::kReal) {
        EXPECT_NE(parse(command, s.flag(), "nan"), "");
        EXPECT_NE(parse(command, s.flag(), "inf"), "");
      }
    }
  }
  EXPECT_GE(checked, 50);
}

// Parses `fixres <command> --config F --imnet-path d --weight-path w [extra]` with F holding
// `<key> = <value>`; "" when accepted, else the error.
std::string parseConfig(const std::string& command, const std::string& key,
                        const std::string& value, const std::string& extra = "") {
  static const std::string dir = testing::makeTempDir("fixres_settings_");
  const std::string file = dir + "/cfg.toml";
  std::ofstream(file) << key << " = " << value << "\n";
  CLI::App app{"fixres", "fixres"};
  GlobalOptions global;
  auto commands = buildCli(app, global);
  try {
    app.parse(command + " --config " + file + " --imnet-path d --weight-path w " + extra, false);
    return "";
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
}

// The same ranges through --config: a value outside is refused naming the file and the key, also
// when the command line gives the flag a valid value (the file's mistake is one all the same).
TEST(SettingsTable, TheConfigFileEnforcesEachRowsRange) {
  int checked = 0;
  for (auto mode : {engine::RunMode::kTrain, engine::RunMode::kFinetune}) {
    const std::string command = mode == engine::RunMode::kTrain ? "train" : "finetune";
    for (const Row& r : runRows(mode)) {
      const Setting& s = r.setting;
      const bool offered = s.offeredTo(command);
      if (!offered || !r.numeric || s.range.kind == Range::Kind::kAny) continue;
      const std::string key = s.flag().substr(2);
      SCOPED_TRACE(command + " " + key);
      const double step = s.range.kind == Range::Kind::kInteger ? 1 : 1e-3;
      std::vector<double> bad = {s.range.loOpen ? s.range.lo : s.range.lo - step};
      if (!std::isinf(s.range.hi)) bad.push_back(s.range.hiOpen ? s.range.hi : s.range.hi + step);
      const std::string good = number(s.range.loOpen ? s.range.lo + 1 : s.range.lo);
      EXPECT_EQ(parseConfig(command, key, good).find(s.flag() + ": must be"), std::string::npos);
      for (double v : bad) {
        if (s.range.hasSpecial && v == s.range.special) continue;
        const std::string lead = "cfg.toml: " + key + " = " + number(v) + ": " + s.flag() +
                                 ": must be " + s.range.describe();
        std::string e = parseConfig(command, key, number(v));
        EXPECT_NE(e.find(lead), std::string::npos) << e;
        e = parseConfig(command, key, number(v), s.flag() + " " + good);
        EXPECT_NE(e.find(lead), std::string::npos) << e;
        ++checked;
      }
      // Not a number at all, with the flag given too.
      const std::string e = parseConfig(command, key, "\"two\"", s.flag() + " " + good);
      EXPECT_NE(e.find("cfg.toml: " + key + " = two: " + s.flag() + ": must be"), std::string::npos)
          << e;
    }
  }
  EXPECT_GE(checked, 50);
}

// Sets the numeric field of the row whose flag is `flag` to `value`.
struct Spoiler {
  std::string flag;
  double value;
  template <typename T>
  void operator()(const Setting& s, T& field) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      if (s.flag() == flag) field = static_cast<T>(value);
  }
  template <typename T>
  void operator()(const Setting& s, std::optional<T>& field) {
    if constexpr (std::is_arithmetic_v<T>)
      if (s.flag() == flag) field = static_cast<T>(value);
  }
  template <typename T, typename E>
  void operator()(const Setting&, T&, const ChoiceTable<E>&) {}
};

// The engine refuses what the CLI refuses, with the flag's name first (a config.json or a
// program that sets the fields directly gets the same check).
TEST(SettingsTable, TheEngineChecksTheSameRanges) {
  int checked = 0;
  for (const Row& r : runRows(engine::RunMode::kTrain)) {
    const Setting& s = r.setting;
    if (!r.numeric || s.range.kind == Range::Kind::kAny) continue;
    const double bad = s.range.loOpen ? s.range.lo : s.range.lo - 1;
    if (s.range.hasSpecial && bad == s.range.special) continue;
    if (bad < 0 && s.key == std::string("seed")) continue;  // unsigned: cannot hold it
    auto c = engine::RunConfig::forMode(engine::RunMode::kTrain);
    engine::RunConfig::visitSettings(c, Spoiler{s.flag(), bad});
    try {
      c.validateValues();
      ADD_FAILURE() << s.flag() << " = " << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(s.flag() + " must be", 0), 0u) << e.what();
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

}  // namespace
}  // namespace fixres::cli
