#!/usr/bin/env python3
"""The house rules of ARCHITECTURE.md, checked.

  check_structure.py SOURCE_DIR LIBRARY.so FOLDER=OBJ:OBJ:... ... [--lists LISTS.json]

- Floors: every #include and every call (from the objects' symbol tables:
  the library's, l3fsck's and l3bench's) goes to the same floor or a lower
  one; a folder includes and calls nothing of another folder on its own
  floor (tools/ and bench/, executor/ and async/).
- Readers: a folder READERS names reads a lower one only through its
  reader headers and its public l3_*.h ones: tools/ includes from store/
  nothing but the store's reader interface (store/slab/image.h), never
  the live store's internals (its struct, its shared state, its index).
- Rooms: in a folder whose rooms ARCHITECTURE.md lists (a table headed
  "room" under a heading that names the folder, e.g. (`store/`), lowest
  first), every file is in exactly one room, every listed file exists, and
  no file includes, and no object calls, a later room's.
- Writers: each part of the shared state that ARCHITECTURE.md's table
  under "Who writes the shared state" lists (a table headed "part": the
  part as the code writes it, `->part`, or a value marker, `= S_`; its
  type; its writer, a file; the writer's function prefix) is written by
  its writer alone: in any other file of the library, an assignment, an
  increment or decrement through `->part`, or its address handed to a
  function not of the writer's prefix (atomic_load and sizeof read) or
  kept in a pointer not to const, is a violation; so is an assignment of
  a value marker.
- Hooks: in the library, a function pointer (a field, a parameter, a
  typedef, a variable or a cast) is allowed only where SANCTIONED lists it
  (the dispatch tables and callbacks the design has); any other hides a
  call the include and symbol graphs cannot see, often up a room or floor.
- No circles: the include graph of files and the call graph of all the
  objects given (library, tools, bench) have no cycle.
- Python: python/ sits above everything and tests/ may import anything; a
  .py file anywhere else (bench/) may not import the package (l3cache).
- Exports: the shared library exports exactly what api/l3cache.map lists,
  which is exactly what the installed headers (l3_*.h, l3cache.h) declare;
  a public header includes no internal one; each public declaration has a
  comment.
- Narrow rooms: fewer than half of the functions of the slab store's
  wing (store/slab/) take the whole store (an `l3_slabstore *`); the rest
  take only their part of it.
- Short functions: none over 100 lines in the library, tools/ or bench/,
  inline functions in headers included.
- Pending: a violation listed in PENDING (known, to be removed) is
  printed as pending and does not fail the check; a PENDING entry that no
  longer matches a violation does (the list only shrinks).

--lists replaces SANCTIONED, PENDING and READERS with a JSON file's
{"sanctioned": {key: why}, "pending": {key: why}, "readers": {folder:
{folder: [header, ...]}}} (the fixtures'; no "readers": no such rule).
Prints every violation and exits 1 if there is any.
"""
import ast
import json
import os
import re
import subprocess
import sys

FLOORS = {"lib": 0, "uring": 1, "store": 2, "executor": 3, "async": 3, "config": 4, "api": 5,
          "tools": 6, "bench": 6, "tests": 7}
LIBRARY = ("lib", "uring", "store", "executor", "async", "config", "api")
PYTHON_ANYTHING = ("python", "tests")  # may import the package (python/ is above everything)
PACKAGE = "l3cache"
SKIP_DIRS = {"structure_fixtures", "__pycache__"}  # the fixtures' planted violations are not the tree's
MAX_FUNCTION_LINES = 100

# Function pointers the library may have: key (see hook_key) -> why.
SANCTIONED = {
    "lib/l3_clock.h: struct l3_clock":
        "the clock: the executor and the circuit breaker read time through it, a test moves it by hand",
    "lib/l3_status.h: typedef l3_log_fn":
        "the log sink a program installs (l3_set_logger)",
    "lib/readahead.h: typedef l3_readahead_fn":
        "the read-ahead's reader: the caller's read of one item, run on its threads while the caller "
        "waits for the items (a callback for the span of the caller's own loop, as pthread_create's)",
    "store/l3_store.h: struct l3_store_ops":
        "the store interface's vtable: the memory store and the slab store behind one l3_store",
}

# Known violations, each to be removed (issue 30): key -> why it is there.
PENDING = {
    # (none: the list only shrinks, and issue 30's hooks and circle are gone)
}

# Folders that read a lower folder through its reader headers alone (and
# its public l3_*.h): folder -> {folder read: [its reader headers]}.
READERS = {
    "tools": {"store": ["store/slab/image.h"]},  # l3fsck: the image, never the live store's internals
}

problems, pending_seen, pending_lines = [], set(), []
LISTS = {"sanctioned": SANCTIONED, "pending": PENDING, "readers": READERS}


def bad(msg, key=None):
    """A violation; one whose key is pending is printed as pending instead."""
    if key is not None and key in LISTS["pending"]:
        pending_seen.add(key)
        pending_lines.append(f"pending: {msg} [{key}: {LISTS['pending'][key]}]")
    else:
        problems.append(msg)


def walk(src, folder, suffixes):
    for root, dirs, files in os.walk(os.path.join(src, folder)):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(suffixes):
                yield os.path.join(root, name)


def sources(src):
    for folder in FLOORS:
        yield from walk(src, folder, (".c", ".h"))


def folder_of(src, path):
    return os.path.relpath(path, src).split(os.sep)[0]


def is_public(path):
    name = os.path.basename(path)
    return name.endswith(".h") and (name.startswith("l3_") or name == "l3cache.h")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def strip_c(text):
    """The text with comments, string and character literals and
    preprocessor lines blanked out: same length, same line breaks."""
    out, i, n, line_start = list(text), 0, len(text), True

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
            line_start = False
            continue
        if c == "#" and line_start:
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


# ---- rooms (ARCHITECTURE.md) ----

def read_rooms(src):
    """{folder: {path within the folder: (rank, room's text)}} from the map's
    room tables: a table whose first header cell is "room", under the last
    heading before it that names a folder in backticks (`store/`)."""
    rooms, folder, table = {}, None, None
    for line in read(os.path.join(src, "ARCHITECTURE.md")).split("\n"):
        if line.startswith("#"):
            m = re.search(r"`([\w./-]+)/`", line)
            folder, table = (m.group(1) if m else None), None
            continue
        if not line.startswith("|"):
            table = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if table is None:
            if folder and cells and cells[0] == "room":
                table = rooms.setdefault(folder, {})
            continue
        if set(cells[0]) <= set("-: "):
            continue  # the header's rule
        rank = len({r for r, _ in table.values()})
        for name in re.findall(r"`([^`]+\.[ch])`", cells[0]):
            if name in table:
                bad(f"ARCHITECTURE.md: {folder}/{name} is in two rooms of {folder}/'s table")
            table[name] = (rank, cells[0].replace("`", ""))
    return rooms


def check_room_tables(src, rooms):
    for folder, table in rooms.items():
        if folder not in FLOORS:
            bad(f"ARCHITECTURE.md: a room table for {folder}/, which is no floor")
            continue
        present = {os.path.relpath(f, os.path.join(src, folder)) for f in walk(src, folder, (".c", ".h"))}
        for name in sorted(present - set(table)):
            bad(f"ARCHITECTURE.md: {folder}/{name} is in no room of {folder}/'s table (add it where it belongs)")
        for name in sorted(set(table) - present):
            bad(f"ARCHITECTURE.md: {folder}/'s table lists {name}, which does not exist")


def room_of(rooms, folder, name):
    """(rank, room) of file `name` (within `folder`), or None."""
    return rooms.get(folder, {}).get(name)


def check_room_edge(rooms, what, src_rel, dst_rel, key):
    """An edge (an include, or a call) from src_rel to dst_rel, both
    folder/path: a violation when it goes to a later room of the folder."""
    folder, a = src_rel.split("/", 1)
    folder2, b = dst_rel.split("/", 1)
    if folder != folder2 or folder not in rooms:
        return
    mine, theirs = room_of(rooms, folder, a), room_of(rooms, folder, b)
    if mine and theirs and theirs[0] > mine[0]:
        bad(f"{what}: room order: {folder}/{b} is in a later room of {folder}/ ({theirs[1]}: room {theirs[0] + 1}) "
            f"than {folder}/{a} ({mine[1]}: room {mine[0] + 1}); ARCHITECTURE.md lists rooms lowest first and "
            f"a room uses only the rooms before it", key)


# ---- includes ----

def resolve(by_name, path, header):
    """The file an include names: beside the includer first, then anywhere."""
    here = os.path.join(os.path.dirname(path), header)
    if os.path.exists(here):
        return here
    found = by_name.get(os.path.basename(header), [])
    return found[0] if len(found) == 1 else None


def find_cycle(graph):
    """A cycle in {node: set(nodes)} as a list, or None (iterative DFS)."""
    color, parent = {}, {}
    for start in sorted(graph):
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


def floor_violation(mine, theirs):
    return FLOORS[theirs] > FLOORS[mine] or (FLOORS[theirs] == FLOORS[mine] and theirs != mine)


def check_includes(src, rooms):
    files = list(sources(src))
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    graph = {}
    for f in files:
        rel = os.path.relpath(f, src)
        mine = folder_of(src, f)
        graph[rel] = set()
        for n, line in enumerate(read(f).split("\n"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = resolve(by_name, f, m.group(1))
            if target is None:
                continue  # generated or outside the tree
            theirs = folder_of(src, target)
            trel = os.path.relpath(target, src)
            graph[rel].add(trel)
            if floor_violation(mine, theirs):
                bad(f"{rel}:{n}: includes {trel}: {mine}/ (floor {FLOORS[mine]}) may not include "
                    f"{theirs}/ (floor {FLOORS[theirs]})", f"{rel} -> {trel}")
            readers = LISTS["readers"].get(mine, {}).get(theirs)
            if readers is not None and not is_public(target) and trel not in readers:
                bad(f"{rel}:{n}: includes {trel}: {mine}/ reads {theirs}/ through its reader interface alone "
                    f"({', '.join(readers)}) and its public l3_*.h headers", f"{rel} -> {trel}")
            check_room_edge(rooms, f"{rel}:{n}: includes {trel}", rel, trel, f"{rel} -> {trel}")
            if is_public(f) and not is_public(target):
                bad(f"{rel}:{n}: a public header includes the internal {trel}")
    cycle = find_cycle(graph)
    if cycle:
        bad("include cycle: " + " -> ".join(cycle))


# ---- calls ----

def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], check=True, capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def object_name(folder, obj):
    """folder/path/stem of an object file: CMake's <target>.dir/path/name.c.o
    keeps the source's path within its folder; a bare name.o is at the top."""
    path = obj.split(".dir/", 1)[1] if ".dir/" in obj else os.path.basename(obj)
    return f"{folder}/{path.split('.')[0]}"


def check_calls(src, rooms, floors):
    """floors: {folder: [object files]}. Edges from undefined to defined
    symbols; a symbol resolves within its own folder first (tools/ and
    bench/ link apart), then in the library, then anywhere (a violation)."""
    defined, wants = {}, {}
    for folder, objs in floors.items():
        for obj in objs:
            name = object_name(folder, obj)
            wants[name] = set()
            for parts in nm(obj):
                if len(parts) == 2 and parts[0] == "U":
                    wants[name].add(parts[1])
                elif len(parts) == 3 and parts[1] in "TDRBCVW":
                    defined.setdefault(parts[2], []).append(name)
    graph = {}
    for name, syms in wants.items():
        mine = name.split("/")[0]
        graph[name] = set()
        for s in syms:
            owners = defined.get(s, [])
            own = [o for o in owners if o.split("/")[0] == mine]
            lib = [o for o in owners if o.split("/")[0] in LIBRARY]
            pick = (own or lib or owners)[:1]
            graph[name].update(o for o in pick if o != name)
        for target in sorted(graph[name]):
            theirs = target.split("/")[0]
            key = f"{name}.o -> {target}.o"
            if floor_violation(mine, theirs):
                bad(f"{name}.o calls into {target}.o: {mine}/ (floor {FLOORS[mine]}) may not call "
                    f"{theirs}/ (floor {FLOORS[theirs]})", key)
            check_room_edge(rooms, f"{name}.o calls into {target}.o", name + ".c", target + ".c", key)
    cycle = find_cycle(graph)
    if cycle:
        bad("call cycle between objects: " + " -> ".join(c + ".o" for c in cycle))


# ---- hooks (function pointers) ----

def ident_before(s, pos):
    m = re.search(r"(\w+)\s*$", s[:pos])
    return m.group(1) if m else "?"


def open_brackets(s, pos):
    """The brackets still open at pos: [(char, position)]."""
    stack = []
    for k, c in enumerate(s[:pos]):
        if c in "({[":
            stack.append((c, k))
        elif c in ")}]" and stack:
            stack.pop()
    return stack


def statement_start(s, pos):
    """Where the statement or declaration holding pos starts."""
    k = max(s.rfind(";", 0, pos), s.rfind("{", 0, pos), s.rfind("}", 0, pos))
    return k + 1


def struct_name(s, brace):
    """The tag of the struct whose body opens at `brace`, else the typedef
    name after its body."""
    head = s[statement_start(s, brace):brace]
    m = re.search(r"\b(?:struct|union)\s+(\w+)\s*$", head)
    if m:
        return m.group(1)
    depth = 0
    for k in range(brace, len(s)):
        depth += {"{": 1, "}": -1}.get(s[k], 0)
        if depth == 0:
            m = re.match(r"\s*(\w+)", s[k + 1:])
            return m.group(1) if m else "?"
    return "?"


def enclosing_function(s, brace):
    """The name of the function whose body opens at `brace`."""
    head = s[statement_start(s, brace):brace]
    m = re.search(r"(\w+)\s*\(", head)
    return m.group(1) if m else "?"


def hook_key(rel, s, pos, name):
    """(key, what) of the function pointer declared at pos: a typedef, a
    struct's field, a function's parameter, a local or a variable."""
    stack = open_brackets(s, pos)
    braces = [b for c, b in stack if c == "{"]
    if stack and stack[-1][0] == "(" and not braces:
        fn = ident_before(s, stack[-1][1])
        return f"{rel}: {fn}({name})", f"parameter {name} of {fn}"
    if braces and re.search(r"\b(struct|union)\b", s[statement_start(s, braces[-1]):braces[-1]]):
        st = struct_name(s, braces[-1])
        return f"{rel}: {st}.{name}", f"field {name} of struct {st}"
    if braces:
        fn = enclosing_function(s, braces[0])
        return f"{rel}: {fn}: {name or 'a cast'}", f"{name or 'a cast'} in {fn}"
    if s[statement_start(s, pos):pos].lstrip().startswith("typedef"):
        return f"{rel}: typedef {name}", f"typedef {name}"
    return f"{rel}: {name}", f"variable {name}"


def function_pointers(s):
    """(position, name) of each function-pointer declarator (name '' for a
    cast) and function-type typedef in stripped text; calls through a
    pointer, (*f)(x), are not declarations."""
    found = []
    for m in re.finditer(r"\(\s*\*\s*(?:const\s+)?(\w*)\s*(?:\[[^\]]*\])?\s*\)\s*\(", s):
        before = s[:m.start()].rstrip()
        word = re.search(r"(\w+)$", before)
        if before and (before[-1] == "*" or (word and word.group(1) not in ("return", "sizeof", "case"))):
            found.append((m.start(), m.group(1)))
    for m in re.finditer(r"\btypedef\b[^;{}]*?\b(\w+)\s*\((?!\s*\*)", s):
        found.append((m.start(1), m.group(1)))
    return found


def check_hooks(src):
    for folder in LIBRARY:
        for f in walk(src, folder, (".c", ".h")):
            rel = os.path.relpath(f, src)
            text = strip_c(read(f))
            for pos, name in function_pointers(text):
                key, what = hook_key(rel, text, pos, name)
                struct_key = re.sub(r": (\w+)\.\w+$", r": struct \1", key)
                if key in LISTS["sanctioned"] or struct_key in LISTS["sanctioned"]:
                    continue
                bad(f"{rel}:{line_of(text, pos)}: {what} is a function pointer: a hook hides a call (often up a "
                    f"room or floor) from the include and symbol graphs; the library has function pointers only "
                    f"in its sanctioned dispatch tables and callbacks (SANCTIONED in tests/check_structure.py)",
                    key)


# ---- writers (ARCHITECTURE.md's "Who writes the shared state") ----

ASSIGN = re.compile(r"(=(?!=)|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<=|>>=|\+\+|--)")
CHAIN = re.compile(r"\b[A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*|\s*\[(?:[^\[\]]|\[[^\[\]]*\])*\])*")
READERS = ("atomic_load", "atomic_load_explicit", "sizeof", "offsetof", "_Alignof")


def read_writers(src):
    """[(marker, writer's path, prefix)] from the map's table headed "part"
    under a heading that says "Who writes"."""
    rows, here, table = [], False, False
    for line in read(os.path.join(src, "ARCHITECTURE.md")).split("\n"):
        if line.startswith("#"):
            here, table = "who writes" in line.lower(), False
            continue
        if not (here and line.startswith("|")):
            table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not table:
            table = cells[0] == "part"
            continue
        if set(cells[0]) <= set("-: ") or len(cells) < 4:
            continue
        marker, writer, prefix = (re.sub(r"^`|`$", "", c) for c in (cells[0], cells[2], cells[3]))
        if not os.path.exists(os.path.join(src, writer)):
            bad(f"ARCHITECTURE.md: the writer of {marker}, {writer}, does not exist")
        rows.append((marker, writer, prefix))
    return rows


def top_level(chain):
    """A chain with its subscripts' contents blanked out."""
    out, depth = [], 0
    for c in chain:
        depth += c == "["
        out.append(c if depth == 0 or c in "[]" else " ")
        depth -= c == "]"
    return "".join(out)


def prototypes(src):
    """{function: [its parameters' texts]} from the library's headers."""
    out = {}
    for folder in LIBRARY:
        for f in walk(src, folder, (".h",)):
            for m in re.finditer(r"\b(\w+)\s*\(([^;{}()]*)\)\s*;", strip_c(read(f))):
                out.setdefault(m.group(1), [p.strip() for p in m.group(2).split(",")])
    return out


def argument_index(s, paren, pos):
    """Which argument of the call whose '(' is at `paren` holds `pos`."""
    depth, index = 0, 0
    for c in s[paren + 1:pos]:
        depth += c in "([{"
        depth -= c in ")]}"
        index += c == "," and depth == 0
    return index


def address_use(s, start, prefix, protos):
    """Why `&chain` at `start` writes through it, or None: handed to a
    function not of the writer's (`prefix`) as a pointer not to const, or
    kept in a pointer not to const."""
    stack = [b for b in open_brackets(s, start) if b[1] >= statement_start(s, start)]
    if stack and stack[-1][0] == "(":
        fn = ident_before(s, stack[-1][1])
        params = protos.get(fn, [])
        k = argument_index(s, stack[-1][1], start)
        if fn.startswith(prefix) or fn in READERS or (k < len(params) and re.match(r"const\b", params[k])):
            return None
        if re.match(r"\w", fn) and fn not in ("if", "while", "return", "switch", "for"):
            return f"hands to {fn}() the address of"
    decl = s[statement_start(s, start):start]
    if re.search(r"\bconst\b[^=;]*\*\s*\w+\s*=\s*$", decl):
        return None
    return "keeps in a pointer not to const the address of"


def writes_in(s, marker, prefix, protos):
    """(position, how) of each write of `marker` in stripped text `s`."""
    if marker.startswith("="):
        value = marker[1:].strip()
        return [(m.start(), "assigns")
                for m in re.finditer(r"(?<![=!<>+\-*/%&|^])=\s*(" + re.escape(value) + r"\w*)", s)]
    name = re.escape(marker[2:])
    found = []
    for m in CHAIN.finditer(s):
        if not re.search(r"->\s*" + name + r"\b", top_level(m.group(0))):
            continue
        after, before = s[m.end():].lstrip(), s[:m.start()].rstrip()
        if ASSIGN.match(after):
            found.append((m.start(), "writes " + ASSIGN.match(after).group(1)))
        elif before.endswith(("++", "--")):
            found.append((m.start(), "writes " + before[-2:]))
        elif before.endswith("&") and not before.endswith("&&"):
            why = address_use(s, len(before) - 1, prefix, protos)
            if why:
                found.append((m.start(), why))
    return found


def check_writers(src):
    protos = prototypes(src)
    for marker, writer, prefix in read_writers(src):
        for folder in LIBRARY:
            for f in walk(src, folder, (".c", ".h")):
                rel = os.path.relpath(f, src)
                if rel == writer:
                    continue
                text = strip_c(read(f))
                for pos, how in writes_in(text, marker, prefix, protos):
                    bad(f"{rel}:{line_of(text, pos)}: {how} {marker}, which only {writer} writes "
                        f"(ARCHITECTURE.md, \"Who writes the shared state\": call its {prefix}* functions)",
                        f"{rel}: writes {marker}")


# ---- Python ----

def check_python(src):
    for folder in list(FLOORS) + ["python"]:
        if folder in PYTHON_ANYTHING:
            continue
        for f in walk(src, folder, (".py",)):
            rel = os.path.relpath(f, src)
            try:
                tree = ast.parse(read(f), rel)
            except SyntaxError as e:
                bad(f"{rel}: does not parse: {e}")
                continue
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                for name in names:
                    if name == PACKAGE or name.startswith(PACKAGE + "."):
                        bad(f"{rel}:{node.lineno}: imports {name}: the package is python/, above everything; "
                            f"{folder}/ (floor {FLOORS[folder]}) may not import it (a Python program that uses "
                            f"the package belongs in python/, e.g. python/bench/)", f"{rel} -> {PACKAGE}")


# ---- exports ----

def declarations(path):
    """(name, line number, documented) of the functions and data a public header declares."""
    lines = read(path).split("\n")
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
    mapped = set(re.findall(r"^\s+(l3_\w+);", read(os.path.join(src, "api", "l3cache.map")), re.M))
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


# ---- function length ----

def functions(s):
    """(name, first line, last line) of each function defined at file level
    in stripped text: a body whose head ends with ')' and has no '='."""
    out, depth, head_start, body = [], 0, 0, None
    for k, c in enumerate(s):
        if c == "{":
            if depth == 0:
                head = s[head_start:k]
                if head.rstrip().endswith(")") and "=" not in head:
                    first = head_start + len(head) - len(head.lstrip())
                    m = re.search(r"(\w+)\s*\(", head)
                    body = (m.group(1) if m else "?", line_of(s, first))
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                if body:
                    out.append((body[0], body[1], line_of(s, k)))
                body, head_start = None, k + 1
        elif c == ";" and depth == 0:
            head_start = k + 1
    return out


WING, WHOLE_STORE = "store/slab", r"\bl3_slabstore\s*\*"


def check_narrow_rooms(src):
    if not os.path.isdir(os.path.join(src, WING)):
        return
    total = whole = 0
    for f in walk(src, WING, (".c", ".h")):
        s = strip_c(read(f))
        lines = s.split("\n")
        for _, first, last in functions(s):
            head = " ".join(lines[first - 1:last])
            total += 1
            whole += bool(re.search(WHOLE_STORE, head[:head.find("{")]))
    print(f"check_structure: {whole} of {total} functions of {WING}/ take the whole store")
    if total and 2 * whole >= total:
        bad(f"{WING}/: {whole} of its {total} functions take the whole store (l3_slabstore *): fewer than half "
            f"may; pass a room only its part of the state (ARCHITECTURE.md, \"Who writes the shared state\")")


def check_function_lengths(src):
    for f in sources(src):
        if folder_of(src, f) == "tests":
            continue
        for name, first, last in functions(strip_c(read(f))):
            if last - first + 1 > MAX_FUNCTION_LINES:
                bad(f"{os.path.relpath(f, src)}:{first}: {name} is a function of {last - first + 1} lines "
                    f"(at most {MAX_FUNCTION_LINES})")


def main(argv):
    args = list(argv[1:])
    if "--lists" in args:
        k = args.index("--lists")
        with open(args[k + 1], encoding="utf-8") as f:
            given = json.load(f)
        LISTS["sanctioned"], LISTS["pending"] = given.get("sanctioned", {}), given.get("pending", {})
        LISTS["readers"] = given.get("readers", {})
        del args[k:k + 2]
    if len(args) < 2:
        print(__doc__)
        return 2
    src, library = args[0], args[1]
    floors = {}
    for arg in args[2:]:
        folder, objs = arg.split("=", 1)
        floors[folder] = [o for o in objs.split(":") if o]
    rooms = read_rooms(src)
    check_room_tables(src, rooms)
    check_includes(src, rooms)
    check_calls(src, rooms, floors)
    check_hooks(src)
    check_writers(src)
    check_python(src)
    check_exports(src, library)
    check_function_lengths(src)
    check_narrow_rooms(src)
    for key in sorted(set(LISTS["pending"]) - pending_seen):
        problems.append(f"pending violation no longer found: {key}: remove it from PENDING in "
                        f"tests/check_structure.py (and its line in ARCHITECTURE.md): the list only shrinks")
    for p in pending_lines:
        print(p)
    for p in problems:
        print(p)
    print(f"check_structure: {len(problems)} problem(s), {len(pending_lines)} pending")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
