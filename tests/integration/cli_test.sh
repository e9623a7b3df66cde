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
expect_code 0; expect_out "^fixres [0-9]+\.[0-9]+\.[0-9]+"; expect_out "^libtorch 1|^libtorch 2"
expect_out "^cuda "; expect_out "^threads [0-9]+"

# Benchmarks end with one "<number> <unit>" line (bench/ reads it).
run "$FIXRES" --threads 1 bench eval --architecture resnet_tiny --input-size 16 --batch 2 --steps 2 --warmup 1
expect_code 0; expect_out "^bench eval resnet_tiny size 16 batch 2, 1 threads, cpu, fp32, contiguous"
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

finish
