#!/usr/bin/env bash
# `fixres bench data` end to end on a tiny image folder: the result line, and exit codes for a
# missing folder (3, data) and an unknown transform (2, usage).
set -u
source "$(dirname "$0")/lib.sh" "$@"

$PY "$SRC/tests/reference/image_folder.py" "$WORK/imgs" >/dev/null || bad "image_folder.py failed"

for kind in full torch val v2-train val-nocrop; do
  batch=4; [ "$kind" = val-nocrop ] && batch=1
  run "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind "$kind" --input-size 64 --threads 2 \
    --batch "$batch" --seconds 0
  expect_code 0; expect_out "^[0-9]+(\.[0-9]+)? img/s$"
done

run "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind full --threads 1 --seconds 0 --from-disk --cpu-time
expect_code 0; expect_out "img/s$"

run "$FIXRES" bench data --dataset-path "$WORK/missing" --kind val --seconds 0
expect_code 3; expect_err_lines 1; expect_err "^fixres: error: .*missing"

run "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind fancy --seconds 0
expect_code 2; expect_err_lines 1; expect_err "unknown transform 'fancy'"

# A corrupt image fails the run with its path and the data exit code.
printf 'not a jpeg' > "$WORK/imgs/a/zz_broken.jpg"
run "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind val --seconds 0
expect_code 3; expect_err_lines 1; expect_err "zz_broken.jpg"

finish
