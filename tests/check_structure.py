#!/usr/bin/env python3
"""The house rules of ARCHITECTURE.md, checked.

  check_structure.py SOURCE_DIR LIBRARY.so FLOOR=OBJ:OBJ:... ...

- Floors: every #include and every call (from the objects' symbol tables)
  goes to the same floor or a lower one; tools/ and bench/ include nothing
  of each other.
- No circles: the include graph of files and the call graph of the
  library's objects have no cycle.
- Exports: the shared library exports exactly what api/l3cache.map lists,
  which is exactly what the installed headers (l3_*.h, l3cache.h) declare;
  a public header includes no internal one; each public declaration has a
  comment.
- Short functions: none over 100 lines in the library, tools/ or bench/.
Prints every violation and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

FLOORS = {"lib": 0, "uring": 1, "store": 2, "executor": 3, "async": 3, "config": 4, "api": 5,
          "tools": 6, "bench": 6, "tests": 7}
LIBRARY = ("lib", "uring", "store", "executor", "async", "config", "api")
MAX_FUNCTION_LINES = 100

problems = []


def bad(msg):
    problems.append(msg)


def sources(src):
    for folder in FLOORS:
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if name.endswith((".c", ".h")):
                    yield os.path.join(root, name)


def folder_of(src, path):
    return os.path.relpath(path, src).split(os.sep)[0]


def is_public(path):
    name = os.path.basename(path)
    return name.endswith(".h") and (name.startswith("l3_") or name == "l3cache.h")


def resolve(src, by_name, path, header):
    """The file an include names: beside the includer first, then anywhere."""
    here = os.path.join(os.path.dirname(path), header)
    if os.path.exists(here):
        return here
    found = by_name.get(os.path.basename(header), [])
    return found[0] if len(found) == 1 else None


def find_cycle(graph):
    """A cycle in {node: set(nodes)} as a list, or None (iterative DFS)."""
    color, parent = {}, {}
    for start in graph:
        if start in color:
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
            elif color.get(nxt) == 1:
                path, n = [node], node
                while n != nxt:
                    n = parent[n]
                    path.append(n)
                return list(reversed(path)) + [nxt]
            elif nxt not in color:
                color[nxt], parent[nxt] = 1, node
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def check_includes(src):
    files = list(sources(src))
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    graph = {}
    for f in files:
        rel = os.path.relpath(f, src)
        mine = folder_of(src, f)
        graph[rel] = set()
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = resolve(src, by_name, f, m.group(1))
            if target is None:
                continue  # generated or outside the tree
            theirs = folder_of(src, target)
            trel = os.path.relpath(target, src)
            graph[rel].add(trel)
            if FLOORS[theirs] > FLOORS[mine] or (FLOORS[theirs] == FLOORS[mine] and theirs != mine):
                bad(f"{rel}:{n}: includes {trel}: {mine}/ (floor {FLOORS[mine]}) may not include "
                    f"{theirs}/ (floor {FLOORS[theirs]})")
            if is_public(f) and not is_public(target):
                bad(f"{rel}:{n}: a public header includes the internal {trel}")
    cycle = find_cycle(graph)
    if cycle:
        bad("include cycle: " + " -> ".join(cycle))


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], check=True, capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def check_calls(src, floors):
    """floors: {folder: [object files]}. Edges from undefined to defined symbols."""
    defined, wants = {}, {}
    for folder, objs in floors.items():
        for obj in objs:
            name = f"{folder}/{os.path.basename(obj).split('.')[0]}"
            wants[name] = set()
            for parts in nm(obj):
                if len(parts) == 2 and parts[0] == "U":
                    wants[name].add(parts[1])
                elif len(parts) == 3 and parts[1] in "TDRBC":
                    defined[parts[2]] = name
    graph = {}
    for name, syms in wants.items():
        graph[name] = {defined[s] for s in syms if s in defined and defined[s] != name}
        mine = name.split("/")[0]
        for target in sorted(graph[name]):
            theirs = target.split("/")[0]
            if FLOORS[theirs] > FLOORS[mine]:
                bad(f"{name}.o calls into {target}.o: {mine}/ may not call up into {theirs}/")
    cycle = find_cycle(graph)
    if cycle:
        bad("call cycle between objects: " + " -> ".join(cycle))


def declarations(path):
    """(name, line number, documented) of the functions and data a public header declares."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith((" ", "\t", "#", "/*", " *", "}", "static", "typedef")):
            continue
        m = re.search(r"\b(l3_\w+)\s*(\(|\[)", line)
        if not m or (m.group(2) == "[" and not line.startswith("extern")):
            continue
        j = i - 1
        while j >= 0 and lines[j].strip() and not lines[j].rstrip().endswith("*/"):
            j -= 1  # other declarations of the same documented group
        out.append((m.group(1), i + 1, j >= 0 and lines[j].rstrip().endswith("*/")))
    return out


def check_exports(src, library):
    declared = {}
    for f in sources(src):
        if is_public(f) and folder_of(src, f) in LIBRARY:
            for name, n, documented in declarations(f):
                declared[name] = f"{os.path.relpath(f, src)}:{n}"
                if not documented:
                    bad(f"{os.path.relpath(f, src)}:{n}: {name} is public but has no comment")
    mapped = set(re.findall(r"^\s+(l3_\w+);", open(os.path.join(src, "api", "l3cache.map")).read(), re.M))
    exported = {p[2].split("@")[0] for p in nm(library, "-D", "--defined-only") if len(p) == 3 and p[1] in "TDRBVW"}
    exported.discard("L3CACHE_0")
    for name in sorted(set(declared) - mapped):
        bad(f"{declared[name]}: {name} is declared public but not in api/l3cache.map")
    for name in sorted(mapped - set(declared)):
        bad(f"api/l3cache.map: {name} is not declared in an installed header")
    for name in sorted(exported - mapped):
        bad(f"{os.path.basename(library)} exports {name}, which is not public")
    for name in sorted(mapped - exported):
        bad(f"{os.path.basename(library)} does not export {name}")


def check_function_lengths(src):
    for f in sources(src):
        if not f.endswith(".c") or folder_of(src, f) == "tests":
            continue
        lines = open(f, encoding="utf-8").read().split("\n")
        start = None
        for i, line in enumerate(lines):
            if line == "{" and i > 0:
                start = i - 1
                while start > 0 and lines[start - 1].strip() and not lines[start - 1].endswith((";", "*/", "}")) \
                        and not lines[start - 1].startswith("#"):
                    start -= 1
            elif line == "}" and start is not None:
                if i - start + 1 > MAX_FUNCTION_LINES:
                    bad(f"{os.path.relpath(f, src)}:{start + 1}: a function of {i - start + 1} lines "
                        f"(at most {MAX_FUNCTION_LINES})")
                start = None


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    src, library = argv[1], argv[2]
    floors = {}
    for arg in argv[3:]:
        folder, objs = arg.split("=", 1)
        floors[folder] = [o for o in objs.split(":") if o]
    check_includes(src)
    check_calls(src, floors)
    check_exports(src, library)
    check_function_lengths(src)
    for p in problems:
        print(p)
    print(f"check_structure: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
