// Weight files by URL: the download cache (common/Download.h) with the check that keeps anything
// but a weight file fixres reads (WeightSource.h) out of it.
#pragma once

#include <string>

#include "fixres/common/Download.h"
#include "fixres/common/Setting.h"

namespace fixres::models {

// `fixres weights fetch`'s rows: the positional name or URL (required), and --refresh.
inline constexpr Setting kFetchWhatRow{
    "",
    "what",
    "Inputs",
    "A name of 'fixres weights list', or an http(s) URL (URL#sha256=HEX: checked against that "
    "SHA-256 or its first 8+ digits)",
    {},
    SettingRole::kInvocation,
    "weights fetch"};
inline constexpr Setting kRefreshRow{
    "",
    "--refresh",
    "Download",
    "Download the file again even when the cache holds it; the cached copy is replaced only "
    "once the new one is checked",
    {},
    SettingRole::kInvocation,
    "weights fetch"};

// fetchToCache(file, options) with options.checkFile opening the file with openWeightSource: a
// download that is not a weight file fixres reads (an HTML page, an empty or truncated body) is
// refused before it enters the cache (WeightsError naming the URL and what the server sent), and
// a cached file that is not one is a WeightsError naming the URL and
// `fixres weights fetch --refresh`.
std::string fetchWeightFile(const RemoteFile& file, DownloadOptions options);

}  // namespace fixres::models
