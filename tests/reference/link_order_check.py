#!/usr/bin/env python3
"""Checks the start-up link order (cmake/FixresLinkOrder.cmake), by the dynamic loader's own trace.

link_order_check.py PROGRAM PROBE ORDER_RSP
    PROGRAM (fixres) lists the libraries of ORDER_RSP first among its DT_NEEDED entries, in that
    order; and every symbol a library imports binds, in PROGRAM, to the library it binds to in
    PROBE (the same libraries linked without the order): LD_DEBUG=bindings of both, compared
    binding by binding over the libraries both load (bindings to the programs themselves, such as
    their copies of `stderr`, differ by program, not by order, and are left out). Prints "N bindings, the same library for
    each; M libraries first"; exit 1 with the first difference.
"""
import os
import re
import subprocess
import sys

program, probe, rsp = sys.argv[1:4]
first = [os.path.basename(l.strip().strip('"')) for l in open(rsp) if l.strip()]
dyn = subprocess.run(["readelf", "-d", program], capture_output=True, text=True, check=True).stdout
needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
assert needed[:len(first)] == first, f"DT_NEEDED starts {needed[:5]}, the order file {first[:5]}"

PATTERN = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")


def bindings(argv):
    run = subprocess.run(argv, env=dict(os.environ, LD_DEBUG="bindings"), capture_output=True,
                         text=True, timeout=300)
    out = {}
    for m in PATTERN.finditer(run.stderr):
        user, definer, symbol = m.groups()
        if argv[0] in (user, definer) or os.path.basename(argv[0]) in (user, definer):
            continue  # the programs differ (their own imports, their copies of data like stderr)
        out[(user, symbol)] = definer
    return out


a, b = bindings([program, "--help"]), bindings([probe])
common = set(a) & set(b)
assert len(common) >= 1000, f"only {len(common)} bindings in common"
for key in sorted(common):
    assert a[key] == b[key], f"{key[1]} from {key[0]}: bound to {a[key]}, without the order {b[key]}"
print(f"{len(common)} bindings, the same library for each; {len(first)} libraries first")
