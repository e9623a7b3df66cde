// The rows of the flags of one invocation that several commands share: where the data and
// outputs are, how files are fetched, the device. Not saved in config.json. Each is a named
// constant, bound where a command offers it (cli/Flags.h, bindSetting).
#pragma once

#include "fixres/common/Setting.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::cli {

// What --out is to each command that writes one.
inline constexpr CommandHelp kOutHelp[] = {
    {"import", "The image folder written"},
    {"sweep", "The sweep folder: sweep.json, sweep.svg and the fine-tuning runs (a model folder)"},
    {"export",
     "The weight file, replaced atomically (--format timm-hub: the folder, new or empty)"},
    {"calibrate", "The weight file, replaced atomically"},
    {"predict", "The results file, replaced atomically (default: stdout)"},
    {"plot", "The SVG (default: RUN_DIR/curves.svg)"},
    {"shard", "The shard folder, new or empty"},
    {nullptr, nullptr}};

inline constexpr CommandHelp kClassNamesHelp[] = {
    {"predict",
     "File of class names, one per line in class order, naming the outputs (default: the model "
     "folder's)"},
    {"eval",
     "File of class names, one per line in class order, naming the report's classes (default: "
     "the model folder's)"},
    {"export",
     "File of class names, one per line in class order, recorded as the hub folder's label_names "
     "(default: the model folder's)"},
    {nullptr, nullptr}};

inline constexpr CommandHelp kTrainSizeHelp[] = {
    {"sweep",
     "The resolution the model was trained at (K_train; default: a model folder's, else 224)"},
    {nullptr, nullptr}};
inline constexpr CommandHelp kFinetuneHelp[] = {
    {"sweep", "Also fine-tune (FixRes: classifier + last BN) at each resolution"},
    {"bench train", "Time the FixRes fine-tuning step (classifier + last BN) instead of training"},
    {nullptr, nullptr}};

inline constexpr Setting kPretrainedRow{
    "",
    "--pretrained",
    "Model",
    "Published weights by name (see 'fixres weights list'): fetched into the cache; sets "
    "--architecture (and timm's preprocessing) unless given",
    {},
    SettingRole::kInvocation};
inline constexpr Setting kCacheDirRow{
    "",
    "--cache-dir",
    "Download",
    "Folder of fetched weight files (default: $XDG_CACHE_HOME/fixres, else ~/.cache/fixres)",
    {},
    SettingRole::kInvocation,
    "",
    "FIXRES_CACHE"};
inline constexpr Setting kDownloadTimeoutRow{
    "",
    "--download-timeout",
    "Download",
    "Seconds a download may stay below 1 KiB/s (or connecting may take, up to 30) before it "
    "fails",
    Range::integers(1, 86400),
    SettingRole::kInvocation};
inline constexpr Setting kImnetPathRow{
    "",
    "--imnet-path",
    "Data",
    "Dataset root holding train/ and val/ (and holdout/ when imported), each read by the first "
    "dataset reader that takes it: an image folder, a folder of tar shards (fixres shard), ... "
    "(docs/data.md, Readers)",
    {},
    SettingRole::kInvocation};
inline constexpr Setting kDatasetPathRow{
    "",
    "--dataset-path",
    "Data",
    "Dataset to read, by the first dataset reader that takes it: an image folder (one "
    "sub-folder "
    "per class), a folder of tar shards (fixres shard), ... (docs/data.md, Readers)",
    {},
    SettingRole::kInvocation};
inline constexpr Setting kNoIndexCacheRow{
    "",
    "--no-index-cache",
    "Data",
    "List image folders by a full scan, without reading or writing their file index "
    "(.fixres-index in the folder, else in the cache folder's index/)",
    {},
    SettingRole::kInvocation};
inline constexpr Setting kNoTensorboardRow{
    "",       "--no-tensorboard",
    "Output", "Write no TensorBoard event file (events.out.tfevents.*) in the run folder",
    {},       SettingRole::kInvocation};
inline constexpr Setting kCpuRow{"",       "--cpu",
                                 "Device", "Run on the CPU even when CUDA is available",
                                 {},       SettingRole::kInvocation};
inline constexpr Setting kTrainSizeRow{"",
                                       "--train-size",
                                       "Resolution",
                                       "The resolution the model was trained at (K_train)",
                                       engine::kImageSizes,
                                       SettingRole::kInvocation,
                                       "",
                                       "",
                                       kTrainSizeHelp};
inline constexpr Setting kFinetuneRow{"",           "--finetune",
                                      "Options",    "FixRes fine-tuning (classifier + last BN)",
                                      {},           SettingRole::kInvocation,
                                      "",           "",
                                      kFinetuneHelp};
inline constexpr Setting kOutRow =
    Setting{"", "--out,--output", "Output", "The output path", {}, SettingRole::kInvocation, "",
            "", kOutHelp}
        .writtenTo();
inline constexpr Setting kClassNamesRow{
    "",
    "--class-names",
    "Output",
    "File of class names, one per line in class order (default: the model folder's)",
    {},
    SettingRole::kInvocation,
    "",
    "",
    kClassNamesHelp};
inline constexpr Setting kLicenseRow{
    "",
    "--license",
    "Output",
    "timm-hub: the license recorded (default: cc-by-nc-4.0 for weights derived from FixRes's, "
    "else none)",
    {},
    SettingRole::kInvocation};
inline constexpr Setting kSavePathRow =
    Setting{"",       "--save-path",
            "Output", "Folder of the .npy files (written by extract, read by eval-softmax)",
            {},       SettingRole::kInvocation}
        .writtenTo();
inline constexpr Setting kConfigRow{
    "",
    "--config",
    "Config",
    "TOML file (INI when named *.ini) of this subcommand's options: `key = value`, keys are "
    "flag names without '--'; flags on the command line win",
    {},
    SettingRole::kInvocation};

// Which of the reference's two file names eval-softmax reads.
inline constexpr Setting kSoftmaxVersionRow{
    "",
    "--version",
    "Data",
    "v1: <arch>_softmax.npy; v2: <arch>_softmax_v2.npy (the reference's two releases)",
    {},
    SettingRole::kInvocation,
    "eval-softmax"};

}  // namespace fixres::cli
