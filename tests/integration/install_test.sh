#!/usr/bin/env bash
# make install: the CLI and the docs under a prefix, the installed binary running from anywhere
# (its library folders kept), and the Makefile's prefix ~/.local unless PREFIX is given.
set -u
source "$(dirname "$0")/lib.sh" "$@"
BUILD="$(cd "$(dirname "$FIXRES")/.." && pwd)"
P="$WORK/prefix with space"
run cmake --install "$BUILD" --prefix "$P"
expect_code 0
[ -x "$P/bin/fixres" ] || bad "no executable $P/bin/fixres"
expect_file "$P/share/doc/fixres/README.md"
expect_file "$P/share/doc/fixres/cli-reference.md"
# From another folder, through PATH, with nothing of the build around it.
mkdir -p "$WORK/elsewhere"
(cd "$WORK/elsewhere" && env PATH="$P/bin:/usr/bin:/bin" fixres version) >"$OUT" 2>"$ERR"
CODE=$?
expect_code 0; expect_out "^fixres [0-9]+\.[0-9]+\.[0-9]+$"
want=$("$FIXRES" version | head -1)
[ "$(head -1 "$OUT")" = "$want" ] || bad "the installed fixres says $(head -1 "$OUT"), the build's $want"
# The Makefile's default prefix and an explicit one (dry run: nothing installed).
run make -n -C "$SRC" --no-print-directory install BUILD_DIR="$BUILD" HOME=/home/someone
expect_code 0; expect_out "cmake --install \"$BUILD\" --prefix \"/home/someone/\.local\"$"
run make -n -C "$SRC" --no-print-directory install BUILD_DIR="$BUILD" PREFIX=/opt/fixres
expect_code 0; expect_out "cmake --install \"$BUILD\" --prefix \"/opt/fixres\"$"
# The Makefile itself with a prefix holding a space (the build is up to date: nothing rebuilt).
run make -C "$SRC" --no-print-directory install BUILD_DIR="$BUILD" PREFIX="$WORK/my prefix"
expect_code 0
[ -x "$WORK/my prefix/bin/fixres" ] || bad "make install PREFIX with a space installed nothing there"
finish
