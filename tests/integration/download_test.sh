#!/usr/bin/env bash
# Weights by URL and by name, against a local HTTP server (tests/reference/http_server.py):
# a file is fetched once, then found in the cache with no request at all, and loads as weights
# (eval, extract); a 404, a truncated body, a stalled server, a refused connection and a wrong
# checksum fail with exit 4 and leave nothing in the cache; kill -9 in the middle of a download
# leaves only the .part file, and the next run completes it (a Range request, or the whole file
# again from a server that ignores ranges) with the served bytes, as after SIGTERM to a train
# run whose weights are downloading (exit 1, the .part kept); two processes fetching the
# same file make one request; --pretrained uses the catalogue (architecture, cache path) and
# refuses unknown names and conflicting flags with exit 2. URLs whose readable parts sanitise alike
# (a~b and a_b, a%20b and a_20b) get a cache file each. A 200 with an HTML page, an empty body or a
# body cut short without Content-Length is refused (exit 4, nothing cached); a cached file that is
# not a weight file names its URL and `weights fetch --refresh`, which fetches it again and keeps
# the cached copy when the new download fails. Every command runs under a timeout.
set -u
source "$(dirname "$0")/lib.sh" "$@"
T=(timeout 60)
D="$WORK/data"
SERVED="$WORK/served"
LOG="$WORK/requests.log"
mkdir -p "$SERVED"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 1 --val 2 --size 24 >/dev/null ||
  bad "data generation"
# resnet_tiny weights for 3 classes in FixRes's layout ({'model': {'module.<name>': ...}}).
"$PY" - "$SRC/tests/reference" "$SERVED/w.pth" <<'EOF' || bad "weights generation"
import sys, torch
sys.path.insert(0, sys.argv[1])
from models_reference import TinyResNet
torch.manual_seed(0)
model = TinyResNet(num_classes=3)
torch.save({"model": {"module." + k: v for k, v in model.state_dict().items()}}, sys.argv[2])
EOF
SHA=$(sha256sum "$SERVED/w.pth" | cut -d' ' -f1)

timeout 330 "$PY" "$SRC/tests/reference/http_server.py" "$SERVED" "$LOG" --lifetime 320 \
  >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 1 100); do grep -q '^port ' "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(awk '/^port /{print $2}' "$WORK/server.out")
[ -n "$PORT" ] || { bad "the test server did not start: $(cat "$WORK/server.err")"; finish; }
URL="http://127.0.0.1:$PORT"
ENTRY="127.0.0.1_$PORT"

requests() { grep -c -- "$1" "$LOG"; }
# The cache path of "$URL/$1" under cache folder $2 (docs/models.md, "The cache"): the URL's
# folders, then the file's name reduced to [A-Za-z0-9._+-] with "-" and the first 16 hexadecimal
# digits of the SHA-256 of the whole URL before its extension.
cached() {
  local rel=${1%%\?*} hash name
  hash=$(printf %s "$URL/$1" | sha256sum | cut -c1-16)
  name=$(basename "$rel" | sed 's/[^A-Za-z0-9._+-]/_/g')
  echo "$2/$ENTRY/$(dirname "$rel")/${name%.*}-$hash.${name##*.}"
}
# No file at all under cache folder $1 (the folders made for a failed download are removed too).
empty_cache() {
  local left
  left=$(find "$1" -mindepth 1 2>/dev/null | head -5)
  [ -z "$left" ] || bad "$2: the cache is not empty: $left"
}
# No temporary (dot file) under cache folder $1.
no_temporaries() {
  local left
  left=$(find "$1" -name '.*' -type f 2>/dev/null | head -5)
  [ -z "$left" ] || bad "$2: temporaries left: $left"
}
same_as_served() { cmp -s "$1" "$SERVED/w.pth" || bad "$2: $1 differs from the served file"; }
# Waits (up to 10 s) for a .part file with bytes under $1.
wait_part() {
  for _ in $(seq 1 100); do
    [ -n "$(find "$1" -name '*.part' -size +0 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  return 1
}

# 1. eval with a URL: fetched once into the cache (FIXRES_CACHE), loaded, a plain progress line
#    on a stderr that is not a terminal.
C="$WORK/cache"
EVAL=(eval --dataset-path "$D/val" --architecture resnet_tiny --input-size 24 --batch 2 --workers 1)
FIXRES_CACHE="$C" run "${T[@]}" "$FIXRES" "${EVAL[@]}" --weight-path "$URL/files/w.pth"
expect_code 0; expect_out "^ +24 "; expect_err "fetching $URL/files/w.pth"; expect_err "fetched "
[ "$(requests /files/w.pth)" -eq 1 ] || bad "first eval: $(requests /files/w.pth) requests, expected 1"
same_as_served "$(cached files/w.pth "$C")" "first eval"
[ "$(cat "$(cached files/w.pth "$C").url")" = "$URL/files/w.pth" ] || bad "first eval: no URL file"
no_temporaries "$C" "first eval"
grep -q $'\r' "$ERR" && bad "a progress bar on a stderr that is not a terminal"

# 2. The same again, and extract with the checksum: the cache answers, no request at all.
FIXRES_CACHE="$C" run "${T[@]}" "$FIXRES" "${EVAL[@]}" --weight-path "$URL/files/w.pth"
expect_code 0; expect_out "^ +24 "
grep -q "fetching" "$ERR" && bad "second eval fetched again"
run "${T[@]}" "$FIXRES" extract --dataset-path "$D/val" --architecture resnet_tiny --input-size 24 \
  --batch 2 --workers 1 --save-path "$WORK/x" --cache-dir "$C" --weight-path "$URL/files/w.pth#sha256=$SHA"
expect_code 0; expect_file "$WORK/x/resnet_tiny_logits.npy"
[ "$(requests /files/w.pth)" -eq 1 ] || bad "cached runs made requests: $(requests /files/w.pth) in all"

# 3. A cached file that fails its checksum is fetched again (and then matches).
printf 'x' >>"$(cached files/w.pth "$C")"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth#sha256=${SHA:0:8}"
expect_code 0; expect_out "^$(cached files/w.pth "$C")$"; expect_err "does not match its checksum"
same_as_served "$(cached files/w.pth "$C")" "re-fetch after a bad checksum"
[ "$(requests /files/w.pth)" -eq 2 ] || bad "re-fetch: $(requests /files/w.pth) requests, expected 2"

# 4. 404: exit 4 naming the URL and the status; nothing in the cache.
C="$WORK/c404"
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/files/missing.pth"
expect_code 4; expect_err "^fixres: error: cannot download $URL/files/missing.pth: HTTP 404"
empty_cache "$C" "404"

# 5. A body shorter than its Content-Length: exit 4, nothing in the cache.
C="$WORK/ctrunc"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/truncated/w.pth"
expect_code 4; expect_err "truncated"; expect_err "$URL/truncated/w.pth"
empty_cache "$C" "truncated"

# 6. A wrong checksum, whole or a prefix: exit 4 naming both digests, nothing kept. A right
#    prefix passes.
C="$WORK/csum"
ZEROS=0000000000000000000000000000000000000000000000000000000000000000
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth#sha256=$ZEROS"
expect_code 4; expect_err "checksum mismatch for $URL/files/w.pth: expected SHA-256 $ZEROS, got $SHA"
empty_cache "$C" "wrong checksum"
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/files/w.pth#sha256=deadbeef"
expect_code 4; expect_err "expected SHA-256 deadbeef\.\.\., got $SHA"
empty_cache "$C" "wrong checksum prefix"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth#sha256=${SHA:0:12}"
expect_code 0; same_as_served "$(cached files/w.pth "$C")" "checksum prefix"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth#sha256=nothex"
expect_code 2; expect_err "sha256="

# 7. A server that stops sending: --download-timeout ends it (exit 4); a refused connection too.
C="$WORK/cstall"
SECONDS=0
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" --download-timeout 2 "$URL/stall/w.pth"
expect_code 4; expect_err "timed out"
[ "$SECONDS" -lt 30 ] || bad "the stalled download took ${SECONDS}s to fail"
empty_cache "$C" "stall"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "http://127.0.0.1:1/w.pth"
expect_code 4; expect_err "cannot download http://127.0.0.1:1/w.pth"
empty_cache "$C" "connection refused"

# 8. kill -9 in the middle of a download: only the .part is left; the next run resumes it with a
#    Range request and ends with the served bytes.
for kind in slow slow-norange; do
  C="$WORK/ckill-$kind"
  # Not under timeout (kill -9 must reach fixres itself); --download-timeout ends it otherwise.
  "$FIXRES" weights fetch --cache-dir "$C" --download-timeout 20 "$URL/$kind/w.pth" \
    >"$WORK/kill.out" 2>"$WORK/kill.err" &
  PID=$!
  wait_part "$C" || bad "$kind: no .part file appeared"
  kill -9 $PID 2>/dev/null
  wait $PID 2>/dev/null
  left=$(cd "$C" && find . -type f | sort | tr '\n' ' ')
  [ "$left" = "./$ENTRY/$kind/.$(basename "$(cached "$kind/w.pth" "$C")").part " ] ||
    bad "$kind: after kill -9 the cache holds: $left"
  run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/$kind/w.pth#sha256=$SHA"
  expect_code 0; expect_out "^$(cached "$kind/w.pth" "$C")$"
  same_as_served "$(cached "$kind/w.pth" "$C")" "$kind: resumed download"
  no_temporaries "$C" "$kind: resumed download"
  grep -q "^/$kind/w.pth bytes=[1-9][0-9]*-$" "$LOG" || bad "$kind: no Range request after kill -9"
  if [ $kind = slow ]; then expect_err "resuming $URL/slow/w.pth at"; else expect_err "does not resume downloads"; fi
done

# 8b. SIGTERM to a train run whose weights are downloading (its stop handlers are installed):
#     the transfer ends, exit 1 saying so, the .part kept for the next run, which resumes it.
C="$WORK/cterm"
"$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --input-size 24 --batch 2 --workers 1 \
  --epochs 1 --shared-folder-path "$WORK/runs" --job-id term --cache-dir "$C" --download-timeout 20 \
  --weight-path "$URL/slow/w.pth?term" >"$WORK/term.out" 2>"$WORK/term.err" &
PID=$!
wait_part "$C" || bad "SIGTERM: no .part file appeared"
kill -TERM $PID
wait $PID
c=$?
[ $c -eq 1 ] || bad "SIGTERM during a download: exit $c, expected 1"
grep -q "stopped by SIGTERM; .* kept in .*\.part, to be resumed by the next run" "$WORK/term.err" ||
  bad "SIGTERM during a download: $(tail -1 "$WORK/term.err")"
[ -n "$(find "$C" -name '.w-*.pth.part' -size +0)" ] || bad "SIGTERM: the .part was not kept"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/slow/w.pth?term"
expect_code 0; expect_err "resuming"
same_as_served "$(cat "$OUT")" "SIGTERM: resumed download"
no_temporaries "$C" "SIGTERM: resumed download"

# 9. Two processes fetching the same file at once: one request, both get the whole file.
C="$WORK/ctwo"
"${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth?two" >"$WORK/two1.out" 2>"$WORK/two1.err" &
P1=$!
"${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth?two" >"$WORK/two2.out" 2>"$WORK/two2.err" &
P2=$!
wait $P1 || bad "two fetches: the first failed: $(cat "$WORK/two1.err")"
wait $P2 || bad "two fetches: the second failed: $(cat "$WORK/two2.err")"
same_as_served "$(cat "$WORK/two1.out")" "two fetches (1)"
same_as_served "$(cat "$WORK/two2.out")" "two fetches (2)"
[ "$(requests '/files/w.pth?two')" -eq 1 ] || bad "two fetches made $(requests '/files/w.pth?two') requests"
no_temporaries "$C" "two fetches"

# 10. --pretrained: the catalogue's URL, cache path and architecture. A file already in the
#     cache is used without any network access (FixRes publishes no checksum to check).
C="$WORK/cpre"
PRE=https://dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/ResNet50_v2.pth
F="$C/dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/ResNet50_v2-$(printf %s "$PRE" |
  sha256sum | cut -c1-16).pth"
mkdir -p "$(dirname "$F")"
"$PY" - "$F" <<'EOF' || bad "ResNet-50 weights generation"
import sys, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet50()
torch.save({"model": {"module." + k: v for k, v in model.state_dict().items()}}, sys.argv[1])
EOF
run "${T[@]}" "$FIXRES" eval --dataset-path "$D/val" --pretrained FixResNet50 --num-classes 1000 \
  --input-size 32 --batch 2 --workers 1 --cache-dir "$C" --json "$WORK/pre.json"
expect_code 0; expect_out "^ +32 "
grep -q "fetching" "$ERR" && bad "--pretrained with a cached file fetched it"
grep -q '"architecture": "ResNet50"' "$WORK/pre.json" || bad "--pretrained did not set the architecture"
run "${T[@]}" "$FIXRES" eval --dataset-path "$D/val" --pretrained FixResNet50 --architecture resnet18
expect_code 2; expect_err_lines 1; expect_err "FixResNet50 is a ResNet50, not --architecture resnet18"
# The same architecture by another name is accepted: the run goes on to read the (missing) data.
run "${T[@]}" "$FIXRES" eval --dataset-path "$WORK/no-data" --pretrained FixResNet50 --architecture resnet50 \
  --cache-dir "$C"
expect_code 3
run "${T[@]}" "$FIXRES" eval --dataset-path "$D/val" --pretrained fixresnet50
expect_code 2; expect_err_lines 1; expect_err "unknown name 'fixresnet50' \(known: FixResNet50, "
run "${T[@]}" "$FIXRES" eval --dataset-path "$D/val" --pretrained FixResNet50 --weight-path "$F"
expect_code 2; expect_err "excludes"
run "${T[@]}" "$FIXRES" eval --dataset-path "$D/val" --pretrained FixPNASNet --architecture resnet50
expect_code 2; expect_err "FixPNASNet is a PNASNet, not --architecture resnet50"
run "${T[@]}" "$FIXRES" weights list
expect_code 0; expect_out "^FixResNet50 +ResNet50 +224 +384 +79.1 +none +https://dl.fbaipublicfiles.com/"
expect_out "^tf_efficientnet_b0_aa +tf_efficientnet_b0 +224 +224 +- +827b6e33\.\.\. +https://github.com/"
run "${T[@]}" "$FIXRES" weights fetch NoSuchWeights --cache-dir "$C"
expect_code 2; expect_err "unknown name 'NoSuchWeights'"

# 11. URLs that sanitise to the same name (a~b and a_b, a%20b and a_20b): each is requested and
#     gets its own cache file with its own bytes, and a run evaluates its own URL's weights (the
#     same loss as with the served file given by its local path).
"$PY" - "$SRC/tests/reference" "$SERVED" <<'EOF' || bad "weights generation (alike names)"
import sys, torch
sys.path.insert(0, sys.argv[1])
from models_reference import TinyResNet
for seed, name in enumerate(["a_b.pth", "a~b.pth", "a_20b.pth", "a b.pth"], 1):
    torch.manual_seed(seed)
    model = TinyResNet(num_classes=3)
    torch.save({"model": {"module." + k: v for k, v in model.state_dict().items()}},
               sys.argv[2] + "/" + name)
EOF
C="$WORK/calike"
for pair in "a_b.pth:a_b.pth" "a~b.pth:a~b.pth" "a_20b.pth:a_20b.pth" "a%20b.pth:a b.pth"; do
  name=${pair%%:*} file=${pair#*:}
  run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/$name"
  expect_code 0; expect_out "^$(cached "files/$name" "$C")$"
  cmp -s "$(cat "$OUT")" "$SERVED/$file" || bad "alike names: $name: the cached file is not the served one"
  n=$(requests "^/files/$name ")
  [ "$n" -eq 1 ] || bad "alike names: $name requested $n times"
done
n=$(find "$C" -name '*.pth' | wc -l)
[ "$n" -eq 4 ] || bad "alike names: $n cache files, expected 4"
loss_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["loss"])' "$1"; }
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/files/a~b.pth" --json "$WORK/url.json"
expect_code 0
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --weight-path "$SERVED/a~b.pth" --json "$WORK/local.json"
expect_code 0
[ "$(loss_of "$WORK/url.json")" = "$(loss_of "$WORK/local.json")" ] ||
  bad "alike names: eval of $URL/files/a~b.pth did not use its own weights"

# 12. Bodies that are not weight files: an HTML page, an empty body, a body cut short without
#     Content-Length. Exit 4 naming the URL and what was sent; nothing cached, so the next try
#     asks the server again.
C="$WORK/cbody"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/html/w.pth"
expect_code 4; expect_err_lines 2  # the "fetching" line, the error
expect_err "^fixres: error: cannot download $URL/html/w.pth: the server sent an HTML page \([0-9]+ bytes, text/html"
empty_cache "$C" "HTML page"
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/html/w.pth"
expect_code 4; expect_err "cannot download $URL/html/w.pth: the server sent an HTML page"
n=$(requests '^/html/w.pth ')
[ "$n" -eq 2 ] || bad "HTML page: $n requests, expected 2"
empty_cache "$C" "HTML page (eval)"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/empty/w.pth"
expect_code 4; expect_err_lines 2; expect_err "cannot download $URL/empty/w.pth: the server sent 0 bytes"
empty_cache "$C" "empty body"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/cut/w.pth"
expect_code 4; expect_err_lines 2
expect_err "cannot download $URL/cut/w.pth: the server sent [0-9]+ bytes .*, which fixres cannot read as weights \(it is a truncated zip"
empty_cache "$C" "body cut short"

# 13. A cached copy that is not a weight file (damaged, or written by hand): exit 4 naming the URL
#     and the way out, with no request; `weights fetch --refresh` fetches it again. A refresh that
#     fails keeps the cached copy.
C="$WORK/crefresh"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth?refresh"
expect_code 0
W=$(cat "$OUT")
[ -f "$W" ] && printf '<html>gone</html>\n' >"$W"
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/files/w.pth?refresh"
expect_code 4; expect_err_lines 1
expect_err "the cached copy of $URL/files/w.pth\?refresh cannot be used \($W "
expect_err "'fixres weights fetch --refresh $URL/files/w.pth\?refresh' downloads it again"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/w.pth?refresh"
expect_code 4; expect_err "weights fetch --refresh"
n=$(requests '^/files/w.pth?refresh ')
[ "$n" -eq 1 ] || bad "a damaged cached copy: $n requests, expected 1"
run "${T[@]}" "$FIXRES" weights fetch --refresh --cache-dir "$C" "$URL/files/w.pth?refresh"
expect_code 0; expect_out "^$W$"; same_as_served "$W" "--refresh"
n=$(requests '^/files/w.pth?refresh ')
[ "$n" -eq 2 ] || bad "--refresh: $n requests, expected 2"
run "${T[@]}" "$FIXRES" "${EVAL[@]}" --cache-dir "$C" --weight-path "$URL/files/w.pth?refresh"
expect_code 0; expect_out "^ +24 "
cp "$SERVED/w.pth" "$SERVED/gone.pth"
run "${T[@]}" "$FIXRES" weights fetch --cache-dir "$C" "$URL/files/gone.pth"
expect_code 0
G=$(cat "$OUT")
rm "$SERVED/gone.pth"
run "${T[@]}" "$FIXRES" weights fetch --refresh --cache-dir "$C" "$URL/files/gone.pth"
expect_code 4; expect_err "cannot download $URL/files/gone.pth: HTTP 404"
same_as_served "$G" "a failed --refresh"
no_temporaries "$C" "a failed --refresh"

finish
