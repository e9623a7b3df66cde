#!/usr/bin/env bash
# `fixres holdout`: a seeded fraction of each class of DATA/train/ moved to DATA/holdout/, the
# images picked as the documented rule picks them (holdout_check.py: SplitMix64 Fisher-Yates,
# implemented there from the rule), none lost; the same seed on a copy picks the same files;
# refusals (an existing split, a fraction or seed out of range) exit 2 and move
# nothing; sweep on data without the split names the command.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 11 --val 2 >/dev/null || bad "data generation"
(cd "$D/train" && ls -d */* | sort) >"$WORK/before.txt"
cp -r "$D" "$WORK/copy"; cp -r "$D" "$WORK/other"
# A class of one image cannot be on both sides: refused naming it, nothing moved.
mkdir -p "$D/train/lonely"; cp "$(ls "$D"/train/*/* | head -1)" "$D/train/lonely/a.jpg"
run "$FIXRES" holdout --imnet-path "$D"
expect_code 3; expect_err_lines 1; expect_err "$D/train/lonely holds 1 image"
[ ! -e "$D/holdout" ] || bad "a refused holdout made $D/holdout"
rm -r "$D/train/lonely"

run "$FIXRES" sweep --imnet-path "$D" --architecture resnet_tiny --weight-path "$WORK/none.pth" --out "$WORK/s"
expect_code 3; expect_err_lines 1; expect_err "$D/holdout does not exist.*fixres holdout --imnet-path $D"

run "$FIXRES" holdout --imnet-path "$D" --fraction 0.3 --seed 7
expect_code 0; expect_out "^holdout: 9 images of 3 classes moved to $D/holdout, 24 left in $D/train \(fraction 0.3, seed 7\)$"
run "$PY" "$SRC/tests/reference/holdout_check.py" "$WORK/before.txt" "$D" holdout 0.3 7
expect_code 0
[ "$CODE" -eq 0 ] || cat "$ERR"

# The same seed on a copy: the same files; another seed: others.
run "$FIXRES" holdout --imnet-path "$WORK/copy" --fraction 0.3 --seed 7
expect_code 0
diff <(cd "$D/holdout" && ls -d */* | sort) <(cd "$WORK/copy/holdout" && ls -d */* | sort) >/dev/null ||
  bad "the same seed picked other files"
run "$FIXRES" holdout --imnet-path "$WORK/other" --fraction 0.3 --seed 8
expect_code 0
run "$PY" "$SRC/tests/reference/holdout_check.py" "$WORK/before.txt" "$WORK/other" holdout 0.3 8
expect_code 0
diff <(cd "$D/holdout" && ls -d */* | sort) <(cd "$WORK/other/holdout" && ls -d */* | sort) >/dev/null &&
  bad "seeds 7 and 8 picked the same files"

# Refusals: exit 2 naming the flag or the folder, nothing moved.
(cd "$D" && find . -type f | sort) >"$WORK/all.txt"
for args in "--fraction 0.3:exists already" "--fraction 0.7:--fraction" "--fraction 0:--fraction" \
  "--seed -1:--seed"; do
  run "$FIXRES" holdout --imnet-path "$D" ${args%%:*}
  expect_code 2; expect_err_lines 1; expect_err "${args#*:}"
done
run "$FIXRES" holdout --imnet-path "$WORK/missing"
expect_code 3; expect_err "$WORK/missing/train"
diff "$WORK/all.txt" <(cd "$D" && find . -type f | sort) >/dev/null || bad "a refused holdout moved files"
finish
