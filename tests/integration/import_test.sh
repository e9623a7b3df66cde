#!/usr/bin/env bash
# `fixres import --out DIR` writes only what it makes: a new folder, an empty one, or one an
# earlier import made (its .fixres-import marker); anything else at DIR (a regular file, a
# folder of the user's, ".", "..", the home folder, a link to nothing) is refused with
# exit 2 naming it and left as it was; DIR.partial and other siblings are never touched.
set -u
source "$(dirname "$0")/lib.sh" "$@"

# Tiny IDX files: 12 training and 6 test images of 4 x 4 pixels, labels 0, 1, 2, 0, ...
mkdir -p "$WORK/idx"
$PY - "$WORK/idx" <<'PY' || bad "cannot write IDX files"
import struct, sys
for stem, n in (("train", 12), ("t10k", 6)):
    with open(f"{sys.argv[1]}/{stem}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 4, 4) + bytes((i * 7 + p) % 256 for i in range(n) for p in range(16)))
    with open(f"{sys.argv[1]}/{stem}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 3 for i in range(n)))
PY
imp() { run "$FIXRES" import --source "$WORK/idx" --numeric-classes --holdout 2 "$@"; }
# A snapshot of a folder's names and contents, to show that a refusal changed nothing.
snap() { (cd "$1" && find . -printf '%p %y %s\n' | sort && cat $(find . -type f | sort)) | md5sum; }
no_temporaries() {
  [ -z "$(find "$1" -maxdepth 1 -name '.fixres-import-*')" ] || bad "temporary folder left in $1"
}
refused() {  # refused DIR-AS-GIVEN: exit 2, one line naming it
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --out $1 "
}

# A regular file.
echo precious > "$WORK/file"
imp --out "$WORK/file"; refused "$WORK/file"
[ "$(cat "$WORK/file")" = precious ] || bad "the file was changed"

# An existing data set of the user's, and the same through a symlink.
mkdir -p "$WORK/mine/train/cat"; echo photo > "$WORK/mine/train/cat/1.jpg"
before=$(snap "$WORK/mine")
imp --out "$WORK/mine"; refused "$WORK/mine"; expect_err "not made by fixres import"
ln -s "$WORK/mine" "$WORK/mylink"
imp --out "$WORK/mylink"; refused "$WORK/mylink"
[ "$(snap "$WORK/mine")" = "$before" ] || bad "the user's folder was changed"

# An import that did not refuse the above would empty what comes next. "/" itself is never
# tried: the tests run as root, and a regression would wipe the machine (ImportTest covers the
# rule that refuses it without touching "/").
if [ "$FAILURES" -ne 0 ]; then
  echo "not trying '.', '..' and the home folder: this fixres deletes what is at --out"
  finish
fi

# ".", ".." and the home folder, all inside the work folder.
mkdir -p "$WORK/cwd/sub"; echo keep > "$WORK/cwd/sub/file"; echo keep > "$WORK/cwd/top"
before=$(snap "$WORK/cwd")
(cd "$WORK/cwd" && imp --out .); refused "\\."
(cd "$WORK/cwd/sub" && imp --out ..); refused "\\.\\."
# (The test's own folder holds the source: refused as an output holding an input.)
(cd "$WORK/cwd/sub" && imp --out "$WORK")
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --source .* is inside --out $WORK: "
HOME="$WORK/cwd" imp --out "$WORK/cwd"; refused "$WORK/cwd"
[ "$(snap "$WORK/cwd")" = "$before" ] || bad "the current folder was changed"

# A link to nothing.
ln -s "$WORK/nowhere" "$WORK/dangling"
imp --out "$WORK/dangling"; refused "$WORK/dangling"; expect_err "symbolic link to nothing"
[ ! -e "$WORK/nowhere" ] || bad "the link's target was created"

# A new folder: DIR.partial (the user's) is not touched; the second import is a no-op.
mkdir -p "$WORK/new.partial"; echo mine > "$WORK/new.partial/x"
imp --out "$WORK/new"
expect_code 0; expect_out "^imported: .*new \(train 10, holdout 2, val 6\)$"
[ "$(find "$WORK/new" -name '*.png' | wc -l)" -eq 18 ] || bad "new/ does not hold 18 images"
[ "$(cat "$WORK/new.partial/x")" = mine ] || bad "new.partial was touched"
no_temporaries "$WORK"
imp --out "$WORK/new"; expect_code 0; expect_out "^already imported"
ln -s "$WORK/new" "$WORK/newlink"
imp --out "$WORK/newlink"; expect_code 0; expect_out "^already imported"

# The marker is fixres's own text: it names fixres import and the counts.
[ "$(cat "$WORK/new/.fixres-import")" = "$(printf 'fixres import\ntrain 10\nholdout 2\nval 6')" ] ||
  bad "marker: $(cat "$WORK/new/.fixres-import")"

# Anything import does not make inside the splits it would replace refuses replacing them (exit 2
# naming --out and the first such entry), and stays; the user's own files beside the splits are
# kept.
echo photo > "$WORK/new/train/1/mine.jpg"
before=$(snap "$WORK/new")
run "$FIXRES" import --source "$WORK/idx" --numeric-classes --holdout 4 --out "$WORK/new"
refused "$WORK/new"; expect_err "holds train/1/mine.jpg, which"
[ "$(snap "$WORK/new")" = "$before" ] || bad "the earlier import with mine.jpg was changed"
rm "$WORK/new/train/1/mine.jpg"

# Other sizes replace the earlier import's entries, and only those.
echo notes > "$WORK/new/NOTES"
run "$FIXRES" import --source "$WORK/idx" --numeric-classes --holdout 4 --out "$WORK/new"
expect_code 0; expect_out "^imported: .*\(train 8, holdout 4, val 6\)$"
[ "$(find "$WORK/new/holdout" -name '*.png' | wc -l)" -eq 4 ] || bad "holdout/ not replaced"
[ "$(cat "$WORK/new/NOTES")" = notes ] || bad "a file of the user's in new/ was removed"
no_temporaries "$WORK"

# A file named like the marker that fixres did not write makes no earlier import: the folder is
# the user's, refused and left as it was (its files, an image folder's included, stay).
for text in "mine" "10 2 6 extra" "fixres import" "$(printf 'fixres import\ntrain 1\nholdout 2\nval -3')"; do
  rm -rf "$WORK/fake"; mkdir -p "$WORK/fake/train/1"; echo photo > "$WORK/fake/train/1/000001.png"
  printf '%s\n' "$text" > "$WORK/fake/.fixres-import"
  before=$(snap "$WORK/fake")
  imp --out "$WORK/fake"; refused "$WORK/fake"; expect_err "not made by fixres import"
  [ "$(snap "$WORK/fake")" = "$before" ] || bad "a folder with marker '$text' was changed"
done
# The marker of earlier versions ("N N N") still names an import of theirs.
rm -rf "$WORK/old"; cp -r "$WORK/new" "$WORK/old"; printf '8 4 6\n' > "$WORK/old/.fixres-import"
run "$FIXRES" import --source "$WORK/idx" --numeric-classes --holdout 4 --out "$WORK/old"
expect_code 0; expect_out "^already imported"

# An empty folder, given as "." from inside it.
mkdir -p "$WORK/empty"
(cd "$WORK/empty" && imp --out .); expect_code 0
[ -f "$WORK/empty/.fixres-import" ] && [ -d "$WORK/empty/val/2" ] || bad "empty folder not filled"

# SIGINT while writing: exit 130, the temporary folder removed, nothing at --out.
mkdir -p "$WORK/bigidx"
$PY - "$WORK/bigidx" <<'PY' || bad "cannot write IDX files"
import os, struct, sys
for stem, n in (("train", 60000), ("t10k", 10)):
    with open(f"{sys.argv[1]}/{stem}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + os.urandom(n * 784))
    with open(f"{sys.argv[1]}/{stem}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
PY
mkdir -p "$WORK/sig"
"$FIXRES" import --source "$WORK/bigidx" --out "$WORK/sig/data" >"$OUT" 2>"$ERR" &
pid=$!
for _ in $(seq 600); do  # until it writes (at most 60 s)
  [ -n "$(find "$WORK/sig" -maxdepth 5 -name '*.png' -print -quit)" ] && break; sleep 0.1
done
kill -INT "$pid"; wait "$pid"; CODE=$?; CMD="import, then SIGINT"
expect_code 130; expect_err "stopped by signal 2, nothing written"
[ -z "$(ls -A "$WORK/sig")" ] || bad "sig/ is not empty: $(ls -A "$WORK/sig")"

# A folder that cannot be written: a clear error, nothing left behind (root writes anyway).
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$WORK/ro"; chmod 555 "$WORK/ro"
  imp --out "$WORK/ro/data"; expect_code 3; expect_err_lines 1; expect_err "$WORK/ro"
  chmod 755 "$WORK/ro"; [ -z "$(ls -A "$WORK/ro")" ] || bad "ro/ is not empty"
fi
finish
