#!/usr/bin/env bash
# `fixres bench data` end to end on a tiny image folder: the result line, exit codes for a
# missing folder (3, data) and an unknown transform (2, usage), and what the listing leaves out.
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

# Left out when listing, with one warning: a FIFO named like an image (reading it waited for a
# writer forever), a broken link, a device. Every ImageFolder extension is read (.bmp .webp .tif
# .ppm ... files holding a JPEG here: the content decides the decoder, as in PIL).
mkfifo "$WORK/imgs/a/fifo.jpg"
ln -s "$WORK/nothing.jpg" "$WORK/imgs/a/broken.jpg"
ln -s /dev/zero "$WORK/imgs/b/zero.png"
for f in b/pic.bmp b/pic.webp C/pic.TIF a/pic.ppm; do cp "$WORK/imgs/a/x2.jpg" "$WORK/imgs/$f"; done
run timeout 120 "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind val --seconds 0
expect_code 0; expect_out "img/s$"
[ "$(grep -c '^warning: ' "$ERR")" -eq 1 ] || bad "expected 1 warning"
expect_err "^warning: data: .*: left out 3 file\(s\) that are not regular files .*, e\.g\. $WORK/imgs/a/broken\.jpg$"
rm -f "$WORK"/imgs/a/{fifo.jpg,broken.jpg,pic.ppm} "$WORK"/imgs/b/{zero.png,pic.bmp,pic.webp} "$WORK/imgs/C/pic.TIF"

# A corrupt image fails the run with its path and the data exit code.
printf 'not a jpeg' > "$WORK/imgs/a/zz_broken.jpg"
run "$FIXRES" bench data --dataset-path "$WORK/imgs" --kind val --seconds 0
expect_code 3; expect_err_lines 1; expect_err "zz_broken.jpg"

finish
