#!/usr/bin/env bash
# The README's tour, run as written, line by line, in a fresh folder: smaller (the import limited,
# one epoch, the sweep's fine-tuning cut to a few steps), nothing else changed; the launcher's
# `python3 train.py` is a script checking its environment. Skipped lines: the ones with "..."
# (templates to fill in) and tensorboard (another program). Each line must exit 0.
set -u
source "$(dirname "$0")/lib.sh" "$@"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
  skip_check fashion-mnist "dataset-fashion-mnist is not installed (make deps installs it)"; finish
fi
# The tour: the sh block after "A tour", continuation lines joined, comments cut.
awk '/^A tour, on the demo/ {t = 1} t && /^```sh/ {b = 1; next} b && /^```/ {exit} b' "$SRC/README.md" |
  sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta' | sed 's/  *#.*$//' >"$WORK/tour.txt"
[ "$(grep -c '^fixres ' "$WORK/tour.txt")" -ge 10 ] || bad "the README's tour was not found ($(wc -l <"$WORK/tour.txt") lines)"
# A build without OpenVINO (make test before make torch2-env) refuses the tour's --runtime
# openvino line by design: that line is skipped there (and required where FIXRES_REQUIRE says so).
"$FIXRES" version | grep -q "^runtimes libtorch openvino" && openvino=1 || openvino=0
cd "$WORK" || exit 1
# The launcher's line runs "any program": this one checks the torchrun-style environment it gets.
cat >train.py <<'PY'
import os
for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    assert k in os.environ, k
assert os.environ["WORLD_SIZE"] == "2", os.environ["WORLD_SIZE"]
PY
ran=0
while IFS= read -r line; do
  case "$line" in *...*|tensorboard*|"") continue ;; esac
  case "$line" in fixres\ *) ;; *) bad "a tour line that is not a fixres command: $line"; continue ;; esac
  case "$line" in *"--runtime openvino"*)
    if [ "$openvino" = 0 ]; then skip_check openvino "this build has no OpenVINO: $line"; continue; fi ;;
  esac
  args=${line#fixres }
  case "$args" in
    import\ *) args="$args --limit-train 1200 --limit-val 300 --holdout 300" ;;
    train\ *|finetune\ *) args=${args/--epochs 4/--epochs 1} ;;
    sweep\ *) args="$args --finetune-iterations 3" ;;
  esac
  # shellcheck disable=SC2086
  eval "run \"\$FIXRES\" $args"
  [ "$CODE" -eq 0 ] || bad "the tour line exits $CODE: $line"
  ran=$((ran + 1))
done <"$WORK/tour.txt"
[ "$ran" -ge 10 ] || bad "only $ran tour lines ran"
echo "$ran tour lines ran"
finish
