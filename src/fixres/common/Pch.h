// Precompiled header: LibTorch is the heavy include; compiling it once keeps 2-core builds short.
#pragma once

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
