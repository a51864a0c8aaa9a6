#!/usr/bin/env python3
"""circles_test.py BUILD_DIR SOURCE_DIR — no two files of one folder call each other in
a loop (docs/architecture.md, "Stacks, not circles"): in every folder of
src/ and tools/, the files' calls (read from the compiled objects: what one
defines and another uses) form a stack, where the files at the bottom call
nothing above them.

KNOWN lists circles let stand, each as its files; the test fails on any
other circle, and on a KNOWN one that is gone (take it off the list).
It checks its own cycle finder on a small graph first."""
import collections
import os
import subprocess
import sys

# Circles still standing, each as its files (none: every folder is a stack).
KNOWN = set()


def circles(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                out.append(" ".join(sorted(c)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def calls(build, source):
    """Edges a -> b between files of one folder: a uses a symbol b defines.
    An object whose source is gone (moved since the build dir was made) is
    stale and left out."""
    objs = {}
    for d, _, files in os.walk(os.path.join(build, "CMakeFiles")):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            p = os.path.join(d, f)
            for top in ("/src/", "/tools/"):
                i = p.find(top)
                if i >= 0:
                    rel = p[i + 1:-2]
                    if os.path.exists(os.path.join(source, rel)):
                        objs.setdefault(rel, p)
                    break
    defs, uses = collections.defaultdict(set), collections.defaultdict(set)
    for rel, p in objs.items():
        nm = subprocess.run(["nm", p], capture_output=True, text=True, check=True).stdout
        for line in nm.splitlines():
            t = line.split()
            if len(t) == 3 and t[1] in "TDBR":
                defs[t[2]].add(rel)
            elif len(t) == 2 and t[0] == "U":
                uses[rel].add(t[1])
    edges = collections.defaultdict(set)
    for a in objs:
        for s in uses[a]:
            for b in defs.get(s, ()):
                if b != a and os.path.dirname(b) == os.path.dirname(a):
                    edges[a].add(b)
    return objs, edges


def main():
    # the finder finds a loop of three beside a stack, and nothing in a stack
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == ["a b c"]
    assert circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    objs, edges = calls(sys.argv[1], sys.argv[2])
    if len(objs) < 50:
        print(f"circles_test: only {len(objs)} objects under {sys.argv[1]}: not built?")
        return 1
    found = set(circles(edges))
    bad = 0
    for c in sorted(found - KNOWN):
        bad = 1
        print(f"circles_test: these files call each other in a loop: {c}")
        files = c.split()
        for a in files:
            for b in sorted(edges[a] & set(files)):
                print(f"  {a} -> {b}")
    for c in sorted(KNOWN - found):
        bad = 1
        print(f"circles_test: no longer a circle (take it off KNOWN): {c}")
    print(f"circles_test: {len(objs)} files, {len(found)} circles, {len(KNOWN)} known")
    return bad


if __name__ == "__main__":
    sys.exit(main())
