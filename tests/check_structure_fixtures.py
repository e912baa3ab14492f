#!/usr/bin/env python3
"""The structure checker on planted violations (tests/structure_fixtures/).

  check_structure_fixtures.py [--cc CC] CHECKER FIXTURES_DIR [NAME...]

For each fixture (every folder but clean/, or the NAMEs given): a copy of
clean/ with the fixture's files over it, each .c compiled with `cc -c`,
the library's objects (lib/ to api/) linked into a shared library with the
tree's export map, and the checker run on it as the real test runs it
(with the tree's lists.json as its SANCTIONED and PENDING). Its exit must
be what the fixture's `expect` says (pass or fail) and its output must hold
each of the following lines. clean/ itself must pass. Exits 1 if any
fixture does not behave.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

LIBRARY = ("lib", "uring", "store", "executor", "async", "config", "api")
PROGRAMS = ("tools", "bench")


def tree_headers(tree):
    """A digest of every header of the tree (what any .c may include)."""
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(tree)):
        for name in sorted(f for f in files if f.endswith(".h")):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, tree).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def compile_tree(cc, tree, work, cache):
    """The library's shared object and {folder: [objects]}; an object whose
    source and the tree's headers are as before is taken from `cache`."""
    folders = [d for d in LIBRARY + PROGRAMS if os.path.isdir(os.path.join(tree, d))]
    includes = [f"-I{os.path.join(tree, d)}" for d in folders]
    headers, objects = tree_headers(tree), {}
    for folder in folders:
        for root, _, files in os.walk(os.path.join(tree, folder)):
            for name in sorted(f for f in files if f.endswith(".c")):
                out = os.path.join(work, "obj", folder, name + ".o")
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(os.path.join(root, name), "rb") as f:
                    key = hashlib.sha256(headers.encode() + folder.encode() + name.encode() + f.read()).hexdigest()
                if key not in cache:
                    cache[key] = os.path.join(cache["dir"], key + ".o")
                    subprocess.run([cc, "-c", "-fPIC", "-O0", "-w", *includes, "-o", cache[key],
                                    os.path.join(root, name)], check=True)
                shutil.copyfile(cache[key], out)
                objects.setdefault(folder, []).append(out)
    library = os.path.join(work, "libfixture.so")
    subprocess.run([cc, "-shared", "-o", library, *[o for f in LIBRARY for o in objects.get(f, [])],
                    f"-Wl,--version-script={os.path.join(tree, 'api', 'l3cache.map')}"], check=True)
    return library, objects


def run_fixture(cc, checker, fixtures, name, cache):
    """(ok, why, the checker's output) for fixture `name`."""
    work = tempfile.mkdtemp(prefix=f"l3-structure-{name}-")
    try:
        tree = os.path.join(work, "tree")
        shutil.copytree(os.path.join(fixtures, "clean"), tree)
        expect_path = os.path.join(fixtures, name, "expect")
        if name != "clean":
            shutil.copytree(os.path.join(fixtures, name), tree, dirs_exist_ok=True)
            os.remove(os.path.join(tree, "expect"))
        with open(expect_path if name != "clean" else os.devnull, encoding="utf-8") as f:
            expect = [line.rstrip("\n") for line in f if line.strip()] or ["pass"]
        library, objects = compile_tree(cc, tree, work, cache)
        args = [sys.executable, checker, tree, library] + \
            [f"{folder}={':'.join(objs)}" for folder, objs in sorted(objects.items())] + \
            ["--lists", os.path.join(tree, "lists.json")]
        run = subprocess.run(args, capture_output=True, text=True)
        out = run.stdout + run.stderr
        passed = run.returncode == 0
        if expect[0] not in ("pass", "fail"):
            return False, f"its expect file starts with {expect[0]!r}, not pass or fail", out
        if passed != (expect[0] == "pass"):
            return False, f"the checker {'passed' if passed else 'failed'} (expected: {expect[0]})", out
        missing = [line for line in expect[1:] if line not in out]
        if missing:
            return False, "the output lacks: " + " | ".join(missing), out
        return True, expect[0], out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv):
    args = argv[1:]
    cc = "cc"
    if args[:1] == ["--cc"]:
        cc, args = args[1], args[2:]
    if len(args) < 2:
        print(__doc__)
        return 2
    checker, fixtures, names = os.path.abspath(args[0]), os.path.abspath(args[1]), args[2:]
    if not names:
        names = ["clean"] + sorted(d for d in os.listdir(fixtures)
                                   if d != "clean" and os.path.isdir(os.path.join(fixtures, d)))
    failures, cache = 0, {"dir": tempfile.mkdtemp(prefix="l3-structure-objects-")}
    try:
        for name in names:
            ok, why, out = run_fixture(cc, checker, fixtures, name, cache)
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {why}")
            if not ok:
                failures += 1
                print("     " + out.replace("\n", "\n     "))
    finally:
        shutil.rmtree(cache["dir"], ignore_errors=True)
    print(f"check_structure_fixtures: {len(names) - failures} of {len(names)} fixtures behave")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
