#!/usr/bin/env python3
"""module-cycles.py: the import cycles of libweir's source files.

Reads the build directory's compile_commands.json to find the object file of
every source of libweir, runs `nm` on each, and draws an edge A -> B when A's
object uses (undefined symbol) a symbol that B's object defines.  Prints the
strongly connected components of more than one file (the import cycles),
largest first, with their sizes and files.

With --check-layers it also checks the layer rules of docs/architecture.md
on the same edges: ir/ uses nothing outside ir/, the rest of ir/ does not
use the lowering layer ir/lower/, and transforms/ reach core/ only through
the plugin API (core/transform.c).

Usage: module-cycles.py BUILDDIR [--max-cycles N] [--max-size N]
                                 [--cycles-under DIR] [--check-layers]
                                 [--edges]
Exits 1 when there are more than N cycles (or a cycle larger than the
given size, or one with a file outside DIR, or a layer rule is broken), so
it can run as a test.
"""
import argparse
import json
import os
import subprocess
import sys


def objects(builddir):
    """source file (relative to the source root) -> object file, for the
    objects of the static libweir (libweir.a.p)."""
    with open(os.path.join(builddir, "compile_commands.json")) as f:
        cmds = json.load(f)
    out = {}
    for c in cmds:
        args = c.get("command", "").split()
        if "-o" not in args:
            continue
        obj = args[args.index("-o") + 1]
        if not obj.startswith("libweir.a.p/"):
            continue
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        out[src] = os.path.join(c["directory"], obj)
    return out


def symbols(obj):
    """(defined, used) global symbols of an object."""
    res = subprocess.run(["nm", "-P", obj], capture_output=True, text=True,
                         check=True)
    defined, used = set(), set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper() and kind not in "N":
            defined.add(name)
    return defined, used


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def layer_problem(a, b):
    """Why the edge a -> b breaks a layer rule, or None."""
    if a.startswith("ir/") and not b.startswith("ir/"):
        return "ir/ uses nothing outside ir/"
    if (a.startswith("ir/") and not a.startswith("ir/lower/")
            and b.startswith("ir/lower/")):
        return "ir/ outside ir/lower/ does not use the lowering layer"
    if (a.startswith("transforms/") and b.startswith("core/")
            and b != "core/transform.c"):
        return "transforms/ use only the IR and the plugin API"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builddir")
    ap.add_argument("--max-cycles", type=int, default=None)
    ap.add_argument("--max-size", type=int, default=None)
    ap.add_argument("--cycles-under", metavar="DIR", default=None,
                    help="a cycle may only hold files under DIR/")
    ap.add_argument("--check-layers", action="store_true")
    ap.add_argument("--edges", action="store_true",
                    help="also print the edges inside each cycle")
    a = ap.parse_args()
    objs = objects(a.builddir)
    if not objs:
        print("no objects of libweir in %s" % a.builddir, file=sys.stderr)
        return 2
    srcroot = os.path.commonpath(list(objs))
    # Files under the build directory are generated (protobuf code).
    name = {s: os.path.relpath(s, srcroot) for s in objs}
    owner, uses = {}, {}
    for s, o in objs.items():
        d, u = symbols(o)
        uses[name[s]] = u
        for sym in d:
            owner[sym] = name[s]
    edges = {}
    for f, u in uses.items():
        edges[f] = {owner[sym] for sym in u if sym in owner and owner[sym] != f}
    comps = [c for c in tarjan(list(uses), edges) if len(c) > 1]
    comps.sort(key=lambda c: (-len(c), c))
    print("%d files, %d cycles" % (len(uses), len(comps)))
    for i, c in enumerate(comps):
        print("cycle %d: %d files" % (i + 1, len(c)))
        for f in c:
            print("  " + f)
            if a.edges:
                for t in sorted(edges[f] & set(c)):
                    print("      -> " + t)
    bad = False
    if a.check_layers:
        for f in sorted(edges):
            for t in sorted(edges[f]):
                why = layer_problem(f, t)
                if why:
                    print("layer: %s -> %s (%s)" % (f, t, why))
                    bad = True
    if a.max_cycles is not None and len(comps) > a.max_cycles:
        print("more than %d cycles" % a.max_cycles, file=sys.stderr)
        bad = True
    if a.max_size is not None and comps and len(comps[0]) > a.max_size:
        print("a cycle of more than %d files" % a.max_size, file=sys.stderr)
        bad = True
    if a.cycles_under is not None:
        under = a.cycles_under.rstrip("/") + "/"
        for i, c in enumerate(comps):
            outside = [f for f in c if not f.startswith(under)]
            if outside:
                print("cycle %d reaches outside %s: %s"
                      % (i + 1, under, " ".join(outside)), file=sys.stderr)
                bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
