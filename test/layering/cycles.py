#!/usr/bin/env python3
"""test/layering/cycles.py: no two files of src/ use each other's functions,
and each header declares only the functions of its own file.

Reads which src/*.c file uses which other file's functions from the built
objects (nm: the functions an object defines, and the symbols it leaves
undefined), and finds the circles in that graph: groups of files in which
every file uses, directly or through the others, a function of every other
(the strongly connected components).  A circle means no file of it can be
read, tested or changed without the others; the layers are meant to go one
way only, from the SQL entry points down to the transport and the helpers.

A header src/x.h declares the functions of src/x.c, or of the files whose
names start with x (one subsystem), never those of an unrelated file: a
reader looks for a function where its header says it is.  Nor does a
header declare a function of a folder above its own, even of its
subsystem (policy/servers.h once declared call/serversadmit.c's): what a
lower folder's header promises, a file of that folder may call.

The files of src/ stand in folders, one per subsystem (LADDER, from the
bottom up): a file uses only its own folder and those below it, and
includes only their headers (a type or a constant taken from a header above
is a dependency that no symbol shows).

Prints an "ok"/"not ok" line for each rule for make test, and each circle
or misplaced declaration found.  Run by hand after a build:
    python3 test/layering/cycles.py [-v]   (-v: the whole graph)
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "src")

# The folders of src/, from the bottom up: a file may use the files of its
# own folder and of the folders below it, never of one above
# (docs/architecture.md, "Layers").  src/queryclaw.c, _PG_init, is above all.
LADDER = ["common", "content", "policy", "transport", "call", "requests",
          "functions", "queue", "workers", ""]


def sources(ext):
    """stem -> its folder ("" for src/ itself), for the files of src/ ending in ext."""
    found = {}
    for folder, _, names in os.walk(SRC):
        for name in names:
            if name.endswith(ext):
                found[name[:-len(ext)]] = os.path.relpath(folder, SRC).replace(".", "")
    return found


def symbols(obj):
    """The functions obj defines, and the symbols it uses from elsewhere."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "T":
            defined.add(fields[2])
        elif len(fields) == 2 and fields[0] == "U":
            used.add(fields[1])
    return defined, used


def objects():
    """(file -> functions it defines, file -> symbols it uses), from nm."""
    where = sources(".c")
    path = {f: os.path.join(SRC, where[f], f + ".o") for f in where}
    missing = [f for f in sorted(where) if not os.path.exists(path[f])]
    if missing:
        sys.exit("not ok - file graph of src/: not built (%s.o missing)" % missing[0])
    defined, used = {}, {}
    for f in sorted(where):
        defined[f], used[f] = symbols(path[f])
    return defined, used


def graph(defined, used):
    """file -> the other files whose functions it uses (stems of src/*.c)."""
    owner = {sym: f for f in defined for sym in defined[f]}
    return {f: sorted({owner[s] for s in used[f] if owner.get(s, f) != f})
            for f in defined}


def misplaced(defined):
    """(header, function, its file) for each declaration in the wrong header."""
    owner = {sym: f for f in defined for sym in defined[f]}
    found = []
    headers = sources(".h")
    for stem in sorted(headers):
        h = stem + ".h"
        with open(os.path.join(SRC, headers[stem], h)) as fh:
            text = fh.read()
        for name in re.findall(r"\bextern\b[^;(]*?\b(\w+)\s*\(", text):
            f = owner.get(name)
            if f is not None and not f.startswith(h[:-2]):
                found.append((h, name, f + ".c"))
    return found


def declared_above(defined):
    """(header, its folder, function, its file, that file's folder) for each
    declaration of a function defined in a folder above the header's."""
    owner = {sym: f for f in defined for sym in defined[f]}
    where = sources(".c")
    rank = {folder: i for i, folder in enumerate(LADDER)}
    found = []
    headers = sources(".h")
    for stem in sorted(headers):
        with open(os.path.join(SRC, headers[stem], stem + ".h")) as fh:
            text = fh.read()
        for name in re.findall(r"\bextern\b[^;(]*?\b(\w+)\s*\(", text):
            f = owner.get(name)
            if f is not None and rank[where[f]] > rank[headers[stem]]:
                found.append((stem + ".h", headers[stem] or "src", name, f + ".c", where[f] or "src"))
    return found


def circles(g):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(" ".join(sorted(comp)))

    for v in g:
        if v not in index:
            visit(v)
    return set(found)


def upward(g):
    """(file, its folder, a file it uses, that file's folder) for each use upward."""
    where = sources(".c")
    rank = {folder: i for i, folder in enumerate(LADDER)}
    found = []
    for f in sorted(g):
        for t in g[f]:
            if rank.get(where[f], -1) < rank.get(where[t], len(LADDER)):
                found.append((f, where[f] or "src", t, where[t] or "src"))
    return found


def upward_includes():
    """(file, its folder, a header it includes, that header's folder) for each include upward."""
    headers = {stem + ".h": folder for stem, folder in sources(".h").items()}
    rank = {folder: i for i, folder in enumerate(LADDER)}
    found = []
    for folder, _, names in os.walk(SRC):
        here = os.path.relpath(folder, SRC).replace(".", "")
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(folder, name)) as f:
                for h in re.findall(r'^#include "([^"/]+)"', f.read(), re.M):
                    if h in headers and rank[headers[h]] > rank[here]:
                        found.append((name, here or "src", h, headers[h] or "src"))
    return sorted(found)


def report(found, line, rule):
    """Print each thing found as line, then the rule's ok or not ok; return found."""
    for item in found:
        print(line % item)
    print("%s - %s" % ("not ok" if found else "ok", rule))
    return found


def main():
    defined, used = objects()
    g = graph(defined, used)
    if "-v" in sys.argv:
        for f in g:
            print("%s -> %s" % (f, " ".join(g[f])))
    found = circles(g)
    for c in sorted(found):
        members = c.split()
        print("# circle: %s" % c)
        for f in members:
            print("#   %s uses %s" % (f, " ".join(x for x in g[f] if x in members)))
    if found:
        print("not ok - no circle in src/'s file graph (%d found)" % len(found))
    else:
        print("ok - no circle in src/'s file graph")
    wrong = report(misplaced(defined), "# %s declares %s, a function of %s",
                   "each header of src/ declares only its own file's functions")
    above = report(declared_above(defined), "# %s (%s/) declares %s, a function of %s (%s/)",
                   "no header of src/ declares a function of a folder above its own")
    up = report(upward(g), "# %s (%s/) uses %s (%s/), a folder above its own",
                "each folder of src/ uses only its own and the folders below it")
    up_inc = report(upward_includes(), "# %s (%s/) includes %s (%s/), a folder above its own",
                    "each folder of src/ includes only its own headers and those of the folders below it")
    return 1 if found or wrong or above or up or up_inc else 0


if __name__ == "__main__":
    sys.exit(main())
