#!/usr/bin/env python3
"""The shared libraries of a program, in the order that makes its start cheapest (docs/architecture.md,
"Start-up time").

The dynamic loader resolves each symbol a library imports by walking the program's global scope,
breadth-first from the program's own DT_NEEDED list, until a library defines it. Debian's LibTorch
brings about 290 libraries (OpenCV, GDAL, Qt, GStreamer...), so a symbol defined late in that
scope costs hundreds of hash-table probes, and a start of fixres spent about a fifth of its time
there. Listing the libraries that define the most looked-up symbols first, in the program's own
DT_NEEDED list, shortens the walks without changing any binding: where two libraries define the
same symbol, the one that came first still comes first (a library is placed only after every
earlier library it shares a symbol with).

Usage: link-order.py PROBE OUT  (PROBE: a program linked exactly as the real one, its main empty)
Writes OUT, a GCC response file naming the libraries to list first (quoted paths, one a line);
an empty one when they cannot be worked out (the programs are then linked as before).
"""
import collections
import os
import re
import subprocess
import sys

# Symbols every shared object defines for the linker: not a conflict between libraries.
LINKER_SYMBOLS = {"_edata", "_end", "__bss_start", "_init", "_fini"}
# Libraries whose lookups cost less than this many probes in all are left where they are.
MIN_BINDINGS = 50


def loader_trace(probe):
    """The probe's global scope (without itself) and how many bindings each library resolved."""
    env = dict(os.environ, LD_DEBUG="scopes,bindings")
    run = subprocess.run([probe], env=env, capture_output=True, text=True, timeout=120)
    scope, counts = None, collections.Counter()
    for line in run.stderr.splitlines():
        if scope is None and "scope 0:" in line:
            scope = line.split("scope 0:", 1)[1].split()[1:]
            continue
        m = re.search(r"binding file .* to (\S+) \[\d+\]:", line)
        if m:
            counts[m.group(1)] += 1
    return scope or [], counts


def defined_symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] not in ("A", "a", "U", "w", "v"):
            # Without its version: a library without versions satisfies any versioned request.
            names.add(parts[2].split("@")[0])
    return names - LINKER_SYMBOLS


def runpath(program):
    out = subprocess.run(["readelf", "-d", program], capture_output=True, text=True).stdout
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", out)
    return [d for d in m.group(1).split(":") if d] if m else []


def first_libraries(probe):
    scope, counts = loader_trace(probe)
    scope = [lib for lib in scope if "ld-linux" not in os.path.basename(lib)]
    # A library the program itself would find elsewhere (its run path holds another file of that
    # name, as OpenVINO's wheel holds its own libtbb) is never named: which file a name loads
    # depends on who asks first.
    elsewhere = set()
    for lib in scope:
        for d in runpath(probe):
            other = os.path.join(d, os.path.basename(lib))
            if os.path.exists(other) and os.path.realpath(other) != os.path.realpath(lib):
                elsewhere.add(lib)
    if len(scope) < 2:
        return []
    index = {lib: i for i, lib in enumerate(scope)}
    # before[b]: the earlier libraries sharing a symbol with b, which must stay before it.
    before, owners = collections.defaultdict(set), collections.defaultdict(list)
    for lib in scope:
        for name in defined_symbols(lib):
            before[lib].update(owners[name])
            owners[name].append(lib)
    after = collections.defaultdict(set)
    for lib, earlier in before.items():
        for e in earlier:
            after[e].add(lib)
    # A library's weight: its own bindings, or those of a library that must wait for it.
    weight = {}
    for lib in reversed(scope):  # every library in `after` comes later in the scope
        weight[lib] = max([counts.get(lib, 0)] + [weight[a] for a in after[lib]])
    placed, done, left = [], set(), set(scope)
    while left:
        ready = [lib for lib in left if before[lib] <= done and lib not in elsewhere]
        if not ready:
            break
        best = max(ready, key=lambda lib: (weight[lib], counts.get(lib, 0), -index[lib]))
        if weight[best] < MIN_BINDINGS:
            break
        placed.append(best)
        done.add(best)
        left.remove(best)
    old = sum(n * (index[lib] + 1) for lib, n in counts.items() if lib in index)
    pos = {lib: i + 1 for i, lib in enumerate(placed)}
    new = sum(n * pos.get(lib, len(placed) + index[lib] + 1) for lib, n in counts.items() if lib in index)
    print(f"link-order: {len(placed)} of {len(scope)} libraries first; scope probes "
          f"{old} -> {new}", file=sys.stderr)
    return placed


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        libs = first_libraries(sys.argv[1])
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"link-order: {e}; the link order is left as it is", file=sys.stderr)
        libs = []
    text = "".join('"' + lib.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for lib in libs)
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(text)
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])


if __name__ == "__main__":
    main()
