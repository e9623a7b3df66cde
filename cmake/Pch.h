// Precompiled header: LibTorch is the heavy include; compiling it once keeps 2-core builds short.
#pragma once

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
