#!/usr/bin/env bash
# Weight files built to exhaust the pickle reader, as torch.save archives given to eval: lists,
# dicts and tuples nested 100,000 and 1,000,000 levels (a 100,000-level data.pkl once ended in
# SIGSEGV), nested from the outside in through the memo, and a flat data.pkl of 3,000,000
# values. Each exits 4 with one error line naming the file and the bound, never a crash.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 2 --train 1 --val 1 --size 16 \
  >/dev/null || bad "data generation"

# The pickle bytes are written directly: Python's own pickle would recurse on them.
"$PY" - "$WORK" <<'EOF' || bad "bomb generation"
import struct, sys, zipfile
work = sys.argv[1]
P = b"\x80\x02"
def outside_in(n):
    parts = [P + b"]r" + struct.pack("<I", 0)]
    for k in range(n):
        parts.append(b"j" + struct.pack("<I", k) + b"]r" + struct.pack("<I", k + 1) + b"a0")
    return b"".join(parts) + b"0j" + struct.pack("<I", 0) + b"."
bombs = {}
for n in (100000, 1000000):
    bombs["lists%d" % n] = P + b"]" * n + b"a" * (n - 1) + b"."
    bombs["marklists%d" % n] = P + b"(" * n + b"l" * n + b"."
    bombs["dicts%d" % n] = P + b"}" + b"K\x01}" * (n - 1) + b"s" * (n - 1) + b"."
    bombs["tuples%d" % n] = P + b"N" + b"\x85" * n + b"."
bombs["outside_in100000"] = outside_in(100000)
bombs["wide3000000"] = P + b"(" + b"N" * 3000000 + b"l."
for name, pkl in bombs.items():
    with zipfile.ZipFile("%s/%s.pth" % (work, name), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")
EOF

for f in "$WORK"/*.pth; do
  run "$FIXRES" eval --cpu --weight-path "$f" --dataset-path "$D/val" --architecture resnet_tiny
  expect_code 4; expect_err_lines 1
  case "$f" in
    */wide*) expect_err "^fixres: error: $f: data.pkl holds more than 2000000 values" ;;
    *) expect_err "^fixres: error: $f: data.pkl (nests too deeply|holds more than)" ;;
  esac
done
finish
