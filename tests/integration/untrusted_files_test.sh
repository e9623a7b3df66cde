#!/usr/bin/env bash
# Files fixres reads that could hang it, exhaust its memory or lead it outside a dataset, through
# the binary (each command under a 120 s watchdog: a hang fails instead of blocking the suite):
# FIFOs as labels.npy (eval-softmax), metrics.jsonl (plot and train resume) and shards.json; a
# sparse 30 GB .fixres-index and shards.json; a .cls label of 999999999999 in shards without an
# index (eval, calibrate, shard); the working folder a killed `fixres shard` leaves, and
# lost+found beside shards; an index with a valid checksum and current stamps listing a file
# outside the dataset.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 2 --train 4 --val 4 --size 24 \
  >/dev/null || bad "data generation"
find "$D" -type d -exec touch -d '1 hour ago' {} +
guard() { run timeout 120 "$@"; [ "$CODE" -ne 124 ] || bad "hung (killed after 120 s)"; }
T=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 --batch 4
  --epochs 2 --sampler distributed --shared-folder-path "$WORK/runs")
guard "$FIXRES" "${T[@]}" --job-id r --stop-after-steps 1
expect_code 0
W="$WORK/runs/train/r/checkpoint.pth"; expect_file "$W"
EVAL=(eval --architecture resnet_tiny --weight-path "$W" --workers 1 --batch 4 --input-size 24)

# FIFOs: refused at once, exit 3 naming the file.
M="$WORK/runs/train/r/metrics.jsonl"
rm -f "$M"; mkfifo "$M"
guard "$FIXRES" plot "$WORK/runs/train/r" --out "$WORK/curves.svg"
expect_code 3; expect_err_lines 1; expect_err "$M: a FIFO, not a regular file"
guard "$FIXRES" "${T[@]}" --job-id r
expect_code 3; expect_err "resumed from"; expect_err "error: cannot read metrics log $M: a FIFO"
rm -f "$M"
mkdir -p "$WORK/softmax"
"$PY" -c "import numpy as np; np.save('$WORK/softmax/ResNet50_softmax.npy', np.full((2, 2), 0.5, np.float32))"
mkfifo "$WORK/softmax/labels.npy"
guard "$FIXRES" eval-softmax --save-path "$WORK/softmax"
expect_code 3; expect_err_lines 1; expect_err "$WORK/softmax/labels.npy: a FIFO, not a regular file"

# Shards without shards.json whose .cls holds 999999999999: a bad sample named by shard and key
# (eval, shard), not a loop over a trillion class names; calibrate reads no labels.
B="$WORK/bigcls"; mkdir -p "$B"
"$PY" -c "
import io, tarfile
good = open('$(ls "$D"/val/*/*.jpg | head -1)', 'rb').read()
with tarfile.open('$B/p0.tar', 'w') as tar:
    for name, data in [('s0.jpg', good), ('s0.cls', b'1'), ('big.jpg', good), ('big.cls', b'999999999999')]:
        info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
" || bad "tar generation"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$B" --num-classes 2
expect_code 3; expect_err_lines 1; expect_err "p0\.tar:big: bad label \(\.cls holds 999999999999"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$B" --num-classes 2 --skip-bad-images
expect_code 0; expect_out " 1$"
guard "$FIXRES" shard --dataset-path "$B" --out "$WORK/bigcls_out"
expect_code 3; expect_err "p0\.tar:big: bad label"
guard "$FIXRES" calibrate --architecture resnet_tiny --weight-path "$W" --dataset-path "$B" \
  --num-classes 2 --input-size 24 --batch 2 --out "$WORK/cal.pth"
expect_code 0

# A FIFO and a sparse 30 GB file as shards.json: not used (one warning naming it), shards scanned.
S="$WORK/shards"
guard "$FIXRES" shard --dataset-path "$D/val" --out "$S"
expect_code 0
rm "$S/shards.json"; mkfifo "$S/shards.json"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$S"
expect_code 0; expect_err "index not used \(cannot read shard index $S/shards.json: a FIFO"
rm "$S/shards.json"; truncate -s 30G "$S/shards.json"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$S"
expect_code 0; expect_err "$S/shards.json: 32212254720 bytes, more than the 1073741824"
# lost+found beside the shards: still a shard folder.
rm "$S/shards.json"; mkdir "$S/lost+found"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$S"
expect_code 0; expect_out " 8$"

# The working folder of a `fixres shard` killed with SIGKILL (its lock file free): removed by the
# rerun, with a warning; one held by a live process is refused, naming it.
O="$WORK/resharded"; mkdir -p "$O/.partial-k1Ll9x"
echo "999999 otherhost" >"$O/.partial-k1Ll9x/.lock"; echo half >"$O/.partial-k1Ll9x/.shard-000000.tar.tmp-0123456789abcdef"
guard "$FIXRES" shard --dataset-path "$D/val" --out "$O"
expect_code 0; expect_err "removing $O/.partial-k1Ll9x, left by a fixres shard that was interrupted"
[ ! -e "$O/.partial-k1Ll9x" ] || bad "the stale working folder is still there"
O2="$WORK/busy"; mkdir -p "$O2/.partial-h0ld3r"; echo "1 host" >"$O2/.partial-h0ld3r/.lock"
flock "$O2/.partial-h0ld3r/.lock" sleep 30 & HOLDER=$!
for _ in $(seq 1 600); do flock -n "$O2/.partial-h0ld3r/.lock" true || break; sleep 0.05; done
flock -n "$O2/.partial-h0ld3r/.lock" true && bad "the holder did not take the lock within 30 s"
guard "$FIXRES" shard --dataset-path "$D/val" --out "$O2"
expect_code 2; expect_err_lines 1; expect_err "is writing into $O2/.partial-h0ld3r"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null

# A sparse 30 GB .fixres-index: ignored with one warning naming it, the folder scanned and the
# index rewritten.
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val"
expect_code 0; expect_file "$D/val/.fixres-index"
truncate -s 30G "$D/val/.fixres-index"
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val"
expect_code 0; expect_err "index not used: cannot read file index $D/val/.fixres-index: 32212254720 bytes"
[ "$(stat -c %s "$D/val/.fixres-index")" -lt 100000 ] || bad "the oversize index was not rewritten"

# An index with a valid CRC and the folders' real stamps that lists a file outside the dataset (a
# file that is no image: reading it would fail the run): not used, one warning naming the entry.
mkdir -p "$WORK/other"; echo "not an image" >"$WORK/other/b.jpg"
"$PY" - "$D/val" <<'EOF' || bad "crafted index"
import os, struct, sys
root = sys.argv[1]
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
s = lambda t: struct.pack("<Q", len(t.encode())) + t.encode()
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
folders, files = [], []
for label, c in enumerate(classes):
    st = os.stat(os.path.join(root, c))
    folders.append(s(c) + struct.pack("<Qqq", st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
    for f in sorted(os.listdir(os.path.join(root, c))):
        st = os.stat(os.path.join(root, c, f))
        files.append(s(c + "/" + f) + struct.pack("<qQq", label, st.st_size, st.st_mtime_ns))
files.append(s(classes[0] + "/../../../other/b.jpg") + struct.pack("<qQq", 0, 13, 0))
payload = s(os.path.abspath(root)) + struct.pack("<Q", len(classes)) + b"".join(s(c) for c in classes)
payload += struct.pack("<Q", len(folders)) + b"".join(folders)
payload += struct.pack("<Q", len(files)) + b"".join(files) + (struct.pack("<q", 0) + s("")) * 2
with open(os.path.join(root, ".fixres-index"), "wb") as f:
    # Format version 3 with the listing stamp of torchvision's IMG_EXTENSIONS, sorted, each
    # followed by a space, in the high 32 bits (data/FileIndex.cpp, indexVersion).
    listing = crc32c(b"bmp jpeg jpg pgm png ppm tif tiff webp ")
    version = (listing << 32) | 3
    f.write(b"FXIDX\0\0\0" + struct.pack("<QQQ", version, len(payload), crc32c(payload)) + payload)
EOF
guard "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val"
expect_code 0; expect_out " 8$"
[ "$(grep -c 'fixres-index' "$ERR")" -eq 1 ] || bad "expected one warning naming the index"
expect_err "file entry '[^']*/\.\./\.\./\.\./other/b\.jpg' has a '\.\.' component"

finish
