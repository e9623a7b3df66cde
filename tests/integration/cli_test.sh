#!/usr/bin/env bash
# The CLI end to end: help, version, and bad usage giving exit code 2 with one error line.
set -u
source "$(dirname "$0")/lib.sh" "$@"

run "$FIXRES" --help
expect_code 0; expect_out "train"; expect_out "finetune"; expect_out "eval-softmax"; expect_out "launch"

for sub in train finetune eval extract eval-softmax launch bench version; do
  run "$FIXRES" "$sub" --help
  expect_code 0; expect_out "$sub"
done

run "$FIXRES" version
expect_code 0; expect_out "^fixres [0-9]+\.[0-9]+\.[0-9]+"; expect_out "^libtorch (1|2)\.[0-9]+\.[0-9]+, (CPU|CUDA) build"; expect_out "^collectives "
expect_out "^cuda "; expect_out "^threads [0-9]+"

# Benchmarks end with one "<number> <unit>" line (bench/ reads it).
run "$FIXRES" --threads 1 bench eval --architecture resnet_tiny --input-size 16 --batch 2 --steps 2 --warmup 1
expect_code 0; expect_out "^bench eval resnet_tiny size 16 batch 2, 1 threads, cpu, libtorch, fp32, contiguous"
expect_out "^[0-9]+\.[0-9]+ img/s$"
run "$FIXRES" bench eval --architecture resnet_tiny --memory-format nhwc
expect_code 2; expect_err_lines 1; expect_err "--memory-format"

run "$FIXRES" --threads 3 version
expect_code 0; expect_out "^threads 3$"

run "$FIXRES" version --no-such-flag
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--no-such-flag"

run "$FIXRES" no-such-command
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: "

run "$FIXRES"
expect_code 2; expect_err_lines 1

run "$FIXRES" --threads -2 version
expect_code 2; expect_err_lines 1; expect_err "threads"

# A bad choice is refused while parsing: exit 2 naming the value and the flag, before any data
# is read (the data folder does not exist: reading it would be exit 3) or any folder is made.
for flag in "--transform bogus-kind" "--sampler bogus-sampler" "--lr-schedule bogus-schedule" \
  "--precision bogus-precision" "--resize-mode bogus-resize"; do
  set -- $flag
  run "$FIXRES" train --imnet-path "$WORK/no-such-data" --shared-folder-path "$WORK/runs" \
    --job-id j "$1" "$2"
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: $1: unknown .*'$2' \(valid: "
done
[ -e "$WORK/runs" ] && bad "a refused run created its run folder"
run "$FIXRES" eval --dataset-path "$WORK/no-such-data" --weight-path "$WORK/none.pth" \
  --memory-format bogus-format
expect_code 2; expect_err_lines 1; expect_err "bogus-format"
# --help lists the valid values of every choice.
run "$FIXRES" train --help
expect_code 0; expect_out "\{torch,full,val,val-nocrop,v2-train,v2-test\}"; expect_out "\{ra,distributed,shard\}"

# docs/cli-reference.md is what scripts/gen-cli-reference.sh generates from this binary.
run bash "$SRC/scripts/gen-cli-reference.sh" "$FIXRES" "$WORK/cli-reference.md"
expect_code 0
diff -u "$SRC/docs/cli-reference.md" "$WORK/cli-reference.md" >"$WORK/cli-reference.diff" ||
  bad "docs/cli-reference.md is out of date: run scripts/gen-cli-reference.sh ($(wc -l <"$WORK/cli-reference.diff") diff lines)"

finish
