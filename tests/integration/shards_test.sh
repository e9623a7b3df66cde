#!/usr/bin/env bash
# Tar shards end to end: `fixres shard` on an image folder; train one epoch on shards with two
# ranks (the reader's shard sampler logged and recorded in config.json; a resume with another
# --sampler; --sampler shard refused on a folder); `extract` on the shards and on the folder gives
# the same logits per sample (matched by key through the index, with numpy); shards written by
# Python's tarfile holding a corrupt image and a sample without .cls (the bad-image policy names
# shard and key); calibrate takes the classifier size from the index; bad flags exit 2.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"; S="$WORK/shards"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 12 --val 6 >/dev/null || bad "data generation"
ARCH=resnet_tiny

# shard: several shards per split (a few KB each), an index beside them.
for split in train val; do
  run "$FIXRES" shard --dataset-path "$D/$split" --out "$S/$split" --shard-size 0.012 --seed 3
  expect_code 0; expect_out "^wrote [0-9]+ samples in [0-9]+ shard\(s\), 3 classes -> $S/$split$"
  expect_file "$S/$split/shards.json"; expect_file "$S/$split/shard-000000.tar"
done
[ "$(ls "$S/train"/*.tar | wc -l)" -ge 4 ] || bad "expected at least 4 training shards"
# Python's tarfile reads them; each sample is <key>.<ext> then <key>.cls holding its class index.
run "$PY" -c "
import glob, json, tarfile
idx = json.load(open('$S/train/shards.json'))
n = 0
for shard in idx['shards']:
    names = tarfile.open('$S/train/' + shard['name']).getnames()
    assert names == sum([[k + '.' + e, k + '.cls'] for k, e in zip(shard['keys'], shard['extensions'])], []), names
    n += len(shard['keys'])
assert n == 36 and len(idx['classes']) == 3, (n, idx['classes'])
print(n)"
expect_code 0; expect_out "^36$"

# train one epoch on shards with two ranks (each reads its own shards), then eval. The shard
# folder's reader requires the shard sampler: it replaces --sampler (default ra), the log says
# so, and config.json records the sampler used.
run "$FIXRES" launch --nproc-per-node 2 -- train --imnet-path "$S" --architecture $ARCH --workers 2 \
  --input-size 32 --epochs 1 --batch 4 --learning-rate 0.05 --absolute-lr \
  --shared-folder-path "$WORK/runs" --job-id t1
expect_code 0; expect_err "tar shard\(s\), read in order through a shuffle buffer"
expect_err "train: shard folder reads in order: sampler shard \(not --sampler ra\)$"
W="$WORK/runs/train/t1/checkpoint.pth"; expect_file "$W"
run "$PY" -c "import json; print(json.load(open('$WORK/runs/train/t1/config.json'))['sampler'])"
expect_code 0; expect_out "^shard$"
# --sampler shard on an image folder (read in any order): exit 2 naming the folder, no run folder.
run "$FIXRES" train --imnet-path "$D" --architecture $ARCH --workers 1 --input-size 32 --epochs 1 \
  --batch 4 --sampler shard --shared-folder-path "$WORK/runs" --job-id nosharding
expect_code 2; expect_err_lines 1; expect_err "--sampler shard reads tar shards, not $D/train"
[ ! -e "$WORK/runs/train/nosharding/config.json" ] || bad "a refused train wrote its config.json"

# A run stopped mid-epoch on shards resumes to the same weights, bit for bit (the shard order is
# a function of seed, epoch and rank): 2 ranks, 4 steps per epoch, stopped after step 3.
TS=(train --imnet-path "$S" --architecture $ARCH --workers 2 --input-size 32 --epochs 2 --batch 4
  --learning-rate 0.05 --absolute-lr --seed 5 --shared-folder-path "$WORK/runs")
run "$FIXRES" launch --nproc-per-node 2 -- "${TS[@]}" --job-id whole
expect_code 0
run "$FIXRES" launch --nproc-per-node 2 -- "${TS[@]}" --job-id cut --stop-after-steps 3
expect_code 0
# Resumed with another --sampler: the reader sets the shard sampler again before the settings are
# compared, so the run resumes (and the log names the flag it overrode).
run "$FIXRES" launch --nproc-per-node 2 -- "${TS[@]}" --job-id cut --sampler distributed
expect_code 0; expect_err "resumed from .* iteration 3"
expect_err "sampler shard \(not --sampler distributed\)$"
run "$PY" -c "import json; print(json.load(open('$WORK/runs/train/cut/config.json'))['sampler'])"
expect_code 0; expect_out "^shard$"
run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$WORK/runs/train/whole/checkpoint.pth" \
  "$WORK/runs/train/cut/checkpoint.pth"
expect_code 0

# calibrate on shards takes the classifier size from the index (3 classes): the same weights as
# with --num-classes 3. Shards without an index say nothing of the classes: --num-classes needed.
CAL=(calibrate --architecture $ARCH --weight-path "$W" --input-size 32 --batch 4)
run "$FIXRES" "${CAL[@]}" --dataset-path "$S/val" --out "$WORK/cal_index.pth"
expect_code 0; expect_out "^calibrated [0-9]+ BatchNorm layers"
run "$FIXRES" "${CAL[@]}" --dataset-path "$S/val" --num-classes 3 --out "$WORK/cal_given.pth"
expect_code 0
run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$WORK/cal_index.pth" "$WORK/cal_given.pth"
expect_code 0
mkdir -p "$WORK/noindex" && cp "$S"/val/*.tar "$WORK/noindex/"
run "$FIXRES" "${CAL[@]}" --dataset-path "$WORK/noindex" --out "$WORK/cal_none.pth"
expect_code 2; expect_err_lines 1; expect_err "no shard index naming the classes: give --num-classes"
[ ! -e "$WORK/cal_none.pth" ] || bad "a refused calibrate wrote $WORK/cal_none.pth"

# extract on the shards (1 and 2 ranks) and on the folder: the same logits for every sample.
run "$FIXRES" extract --dataset-path "$D/val" --architecture $ARCH --weight-path "$W" \
  --input-size 32 --batch 5 --save-path "$WORK/ext_folder"
expect_code 0
run "$FIXRES" extract --dataset-path "$S/val" --architecture $ARCH --weight-path "$W" \
  --input-size 32 --batch 4 --save-path "$WORK/ext_shards"
expect_code 0
run "$FIXRES" launch --nproc-per-node 2 -- extract --dataset-path "$S/val" --architecture $ARCH \
  --weight-path "$W" --input-size 32 --batch 3 --save-path "$WORK/ext_shards2"
expect_code 0
run "$PY" -c "
import json, os
import numpy as np
from torchvision.datasets import ImageFolder
root = '$D/val'
# the folder's sample order (fixres lists like ImageFolder) and each sample's key
keys = [os.path.splitext(os.path.relpath(p, root))[0].replace('.', '_') for p, _ in ImageFolder(root).samples]
order = [k for s in json.load(open('$S/val/shards.json'))['shards'] for k in s['keys']]
assert sorted(keys) == sorted(order) and len(order) == 18
row = {k: i for i, k in enumerate(keys)}
perm = [row[k] for k in order]
f = {n: np.load('$WORK/ext_folder/%s.npy' % n) for n in ['labels', '${ARCH}_logits']}
for d in ['ext_shards', 'ext_shards2']:
    labels = np.load('$WORK/%s/labels.npy' % d)
    logits = np.load('$WORK/%s/${ARCH}_logits.npy' % d)
    assert (labels == f['labels'][perm]).all(), d
    # Batch 4 (2 ranks: 3) against batch 5: float32 sums in another order, so within 1e-5 of the
    # largest logit, not to the last digit.
    diff = np.abs(logits - f['${ARCH}_logits'][perm]).max() / max(1.0, np.abs(logits).max())
    assert diff < 1e-5, (d, diff)
    print(d, 'max difference', diff)
"
expect_code 0; expect_out "ext_shards2 max difference"

# eval reads shards under --imnet-path too; train on shards is reproducible
run "$FIXRES" eval --imnet-path "$S" --architecture $ARCH --weight-path "$W" --input-size 32 --batch 5
expect_code 0; expect_out "^ +32 .* 18$"

# bench data on shards (training order) and its memory line
run "$FIXRES" bench data --dataset-path "$S/train" --kind torch --input-size 32 --batch 4 \
  --seconds 0 --from-disk --memory
expect_code 0; expect_out "^memory: [0-9.]+ MiB after the first pass"; expect_out "img/s$"

# Shards from another tool (Python's tarfile, no index): a corrupt JPEG and a missing .cls.
B="$WORK/bad"; mkdir -p "$B"
run "$PY" -c "
import io, tarfile
def add(tar, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
good = open('$(ls "$D"/val/*/*.jpg | head -1)', 'rb').read()
with tarfile.open('$B/p0.tar', 'w') as tar:
    for k in range(3):
        add(tar, 's%d.jpg' % k, good); add(tar, 's%d.cls' % k, str(k % 2).encode())
    add(tar, 'broken.jpg', b'not a jpeg'); add(tar, 'broken.cls', b'1')
with tarfile.open('$B/p1.tar', 'w') as tar:
    add(tar, 'nolabel.jpg', good)
    add(tar, 's9.jpg', good); add(tar, 's9.cls', b'0')
"
expect_code 0
run "$FIXRES" extract --dataset-path "$B" --architecture $ARCH --weight-path "$W" --num-classes 3 \
  --input-size 32 --batch 2 --save-path "$WORK/ext_bad"
expect_code 3; expect_err_lines 1; expect_err "p0\.tar:broken"
run "$FIXRES" eval --dataset-path "$B" --architecture $ARCH --weight-path "$W" --num-classes 3 \
  --input-size 32 --batch 2 --skip-bad-images
expect_code 0
expect_err "skipping unreadable image .*$B/p0\.tar:broken"
expect_err "skipping unreadable image .*$B/p1\.tar:nolabel: no label \(\.cls member\)"
expect_out "^ +32 .* 4$"

# Bad usage: exit 2 with one line naming the flag or folder; nothing written.
run "$FIXRES" shard --dataset-path "$D/val" --out "$WORK/s0" --shard-size 0
expect_code 2; expect_err_lines 1; expect_err "shard-size"
run "$FIXRES" shard --dataset-path "$D/val" --out "$WORK/s0" --shard-size lots
expect_code 2; expect_err_lines 1; expect_err "shard-size"
run "$FIXRES" shard --dataset-path "$D/val"
expect_code 2; expect_err_lines 1; expect_err "--out"
run "$FIXRES" shard --dataset-path "$D/val" --out "$S/val"
expect_code 2; expect_err_lines 1; expect_err "$S/val is not empty"
run "$FIXRES" shard --dataset-path "$D/val" --out "$WORK/s0" --seed -1
expect_code 2; expect_err_lines 1; expect_err "seed"
[ ! -e "$WORK/s0" ] || bad "a refused shard command left $WORK/s0"
run "$FIXRES" shard --dataset-path "$WORK/missing" --out "$WORK/s1"
expect_code 3; expect_err_lines 1; expect_err "missing"

finish
