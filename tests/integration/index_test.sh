#!/usr/bin/env bash
# The image folder index through the CLI: `fixres train` writes .fixres-index in train/ and val/
# (folders older than the racy window), a second run reads them, --no-index-cache neither reads
# nor writes one, and a corrupt index is rewritten without an error.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 4 --val 2 --size 24 >/dev/null || bad "data generation"
find "$D" -type d -exec touch -d '1 hour ago' {} +
RUNS="$WORK/runs"
T=(train --architecture resnet_tiny --workers 1 --sampler distributed --epochs 1 --input-size 24
  --batch 4 --shared-folder-path "$RUNS" --imnet-path "$D")

run "$FIXRES" "${T[@]}" --no-index-cache --job-id plain
expect_code 0
[ ! -e "$D/train/.fixres-index" ] && [ ! -e "$D/val/.fixres-index" ] || bad "--no-index-cache wrote an index"

run "$FIXRES" "${T[@]}" --job-id first
expect_code 0
expect_file "$D/train/.fixres-index"; expect_file "$D/val/.fixres-index"
head -c 5 "$D/train/.fixres-index" | grep -q FXIDX || bad "train/.fixres-index is not an index"
before=$(stat -c %Y.%i "$D/train/.fixres-index")

sleep 1
run "$FIXRES" "${T[@]}" --job-id second
expect_code 0
[ "$(stat -c %Y.%i "$D/train/.fixres-index")" = "$before" ] || bad "a current index was rewritten"

printf 'garbage' > "$D/train/.fixres-index"
run "$FIXRES" "${T[@]}" --job-id corrupt
expect_code 0
head -c 5 "$D/train/.fixres-index" | grep -q FXIDX || bad "a corrupt index was not rewritten"
grep -q "^warning" "$ERR" && bad "a corrupt index gave a warning"
finish
