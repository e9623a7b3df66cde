#!/usr/bin/env bash
# Writes docs/cli-reference.md from the --help of every subcommand (run after changing flags).
# Usage: scripts/gen-cli-reference.sh [FIXRES_BINARY] [OUTPUT]   (default docs/cli-reference.md;
# tests/integration/cli_test.sh checks that the committed file equals a fresh one)
set -euo pipefail
FIXRES=${1:-build/bin/fixres}
OUT=${2:-"$(cd "$(dirname "$0")/.." && pwd)/docs/cli-reference.md"}
{
  echo "# fixres command-line reference"
  echo
  echo "Generated from \`--help\` by scripts/gen-cli-reference.sh. Defaults are shown after \`=\`."
  echo "Exit codes and global conventions: docs/cli.md."
  echo
  echo "## fixres"
  echo; echo '```'; "$FIXRES" --help; echo '```'
  for sub in train finetune eval extract eval-softmax launch "bench train" "bench eval" "bench allreduce" \
    "bench data" version suggest-resolution import sweep export weights "weights list" "weights fetch" calibrate plot shard \
    settings predict; do
    echo; echo "## fixres $sub"
    echo; echo '```'; $FIXRES $sub --help; echo '```'
  done
  echo; echo "## Run settings"
  echo
  echo "Every setting of a train or finetune run (\`fixres settings\`): its key in config.json (and"
  echo "in a \`--config\` file, by its flag name without \`--\`), its flag, defaults and valid values, and"
  echo "what resuming a run with another value does (refused unless \`--allow-config-change\`); then"
  echo "the options of the commands that are not runs, each a table of its own (not saved in config.json;"
  echo "a \`--config\` file sets them by flag name too)."
  echo
  "$FIXRES" settings
} >"$OUT"
echo "wrote $OUT"
