#!/usr/bin/env python3
"""The largest source files and functions of a tree (the house limits: 500 lines a file, 100 a
function, flat tables and the pickle opcode switch excepted).

Usage: scripts/code-sizes.py [--top N] [--check] [PATH ...]   (default: src apps)

A function is a brace block opened at namespace or class scope after a parameter list (or a
constructor's initialiser list); its size counts the lines from its signature's first line to
its closing brace, lambdas and nested blocks included. Comments, strings and preprocessor lines
are skipped. --check exits 1 when a file or a function is over the limits.
"""
import argparse
import os
import re
import sys

FILE_LIMIT = 500
FUNCTION_LIMIT = 100
# Functions that are a flat table or the opcode switch (allowed over the limit).
EXEMPT = {"visitSettings", "invocationFlags", "catalogue", "table", "Unpickler.cpp step"}


def strip(text):
    """Comments, string and character literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    return ["" if l.lstrip().startswith("#") else l for l in lines]


def functions(path):
    lines = strip(open(path, encoding="utf-8", errors="replace").read())
    found = []
    stack = []  # (kind, start line, name)
    head, head_line = "", None  # text since the last ; { } at this level
    for number, line in enumerate(lines, 1):
        for c in line:
            if c == "{":
                scope = [k for k, _, _ in stack]
                inside_function = "function" in scope
                text = " ".join(head.split())
                if inside_function:
                    kind = "block"
                elif re.search(r"\b(namespace|extern)\b", text) and "(" not in text:
                    kind = "namespace"
                elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", text):
                    kind = "class"
                elif re.search(r"\)\s*(const|noexcept|override|final|->[^{]*|\s)*$", text) or \
                        re.search(r"\)\s*:\s*\w", text):
                    kind = "function"
                else:
                    kind = "block"  # an initialiser, a table
                name = ""
                if kind == "function":
                    m = re.search(r"([~\w:]+)\s*\(", text)
                    name = m.group(1) if m else "?"
                stack.append((kind, head_line or number, name))
                head, head_line = "", None
            elif c == "}":
                if stack:
                    kind, start, name = stack.pop()
                    if kind == "function":
                        found.append((number - start + 1, name, start))
                head, head_line = "", None
            elif c == ";":
                head, head_line = "", None
            else:
                if head_line is None and not c.isspace():
                    head_line = number
                head += c
        head += " "
    return len(lines), found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=["src", "apps"])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    files, funcs = [], []
    for root in args.paths:
        for folder, _, names in os.walk(root):
            for name in names:
                if name.endswith((".cpp", ".h")):
                    path = os.path.join(folder, name)
                    size, found = functions(path)
                    files.append((size, path))
                    funcs += [(n, f"{path}:{line} {name}") for n, name, line in found]
    files.sort(reverse=True)
    funcs.sort(reverse=True)
    print(f"largest files (limit {FILE_LIMIT} lines):")
    for size, path in files[: args.top]:
        print(f"  {size:5d}  {path}")
    print(f"largest functions (limit {FUNCTION_LIMIT} lines; exempt: flat tables, the opcode switch):")
    for size, where in funcs[: args.top]:
        print(f"  {size:5d}  {where}")
    over = [f for f in files if f[0] > FILE_LIMIT]
    def exempt(where):
        path, name = where.split(":")[0], where.split()[-1].split("::")[-1]
        return name in EXEMPT or f"{os.path.basename(path)} {name}" in EXEMPT

    over += [f for f in funcs if f[0] > FUNCTION_LIMIT and not exempt(f[1])]
    for size, where in over:
        print(f"over the limit: {size} {where}", file=sys.stderr)
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
