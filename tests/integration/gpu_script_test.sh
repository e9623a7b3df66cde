#!/usr/bin/env bash
# bench/gpu/run.sh, the one script for the GPU host, run whole on the CPU (--cpu-smoke, tiny
# sizes, no GPU peer): its correctness checks pass against Python references (a seeded
# torchvision ResNet-50, logits compared with numpy, fine-tuned tensors with torch.load) and it
# prints its tables, so that a short GPU lease is not lost to a script bug.
set -u
source "$(dirname "$0")/lib.sh" "$@"
BUILD=$(cd "$(dirname "$FIXRES")/.." && pwd)
run env PYTHON="$PY" OUT="$WORK/gpu" bash "$SRC/bench/gpu/run.sh" --cpu-smoke "$BUILD"
expect_code 0
expect_out "^logits: GPU bf16 channels-last vs CPU fp32 on 32 images: .*: ok$"
expect_out "^finetune: changed .*'fc.weight'.*'layer4.2.bn3.running_mean'.*: \[\]: ok$"
expect_out "^graph: captured vs eager fine-tuning, relative L2 of each change: fc.weight 0.0000, .*: ok$"
expect_out "^\| train 32 \| [0-9.]+ \| n/a \| n/a \| n/a \| n/a \| n/a \| n/a \|$"
expect_out "^\| eval 32 \| [0-9.]+ \| \| n/a \| \| n/a \| \| \|$"
expect_out "^\| fixres train \| [0-9.]+ \| [0-9.]+ \| n/a \|$"
expect_out "^\| PyTorch DataLoader \+ PIL \([0-9]+ workers\) \| [0-9.]+ \| \| n/a \|$"
expect_out "^ratio fixres / peer, end to end: [0-9.]+$"
expect_out "^\| CPU loader, [0-9]+ workers \| [0-9.]+ \| [0-9.]+ \|$"
expect_out "^logits \(--decode-on gpu\): n/a \(fixres: error: --decode-on gpu: the run is on the CPU"
expect_out "^\| fixres train, CPU decoding \([0-9]+ workers\) \| [0-9.]+ \| [0-9.]+ \|$"
expect_out "^\| fixres train, --decode-on gpu \| n/a \(fixres: error: --decode-on gpu: the run is on the CPU\) \| n/a \|$"
expect_out "^\| nvJPEG \+ device transforms \| n/a \(fixres: error: --decode-on gpu: the run is on the CPU\) \| n/a \|$"
# A wrong flag is refused before anything runs.
run bash "$SRC/bench/gpu/run.sh" --no-such-flag
expect_code 2; expect_err "unknown argument '--no-such-flag'"
finish
