#!/bin/sh
# The README's Python install: into a fresh virtual environment (with
# Debian's packages visible: numpy, torch, setuptools, wheel), from the
# checkout, offline; then `import l3cache` from elsewhere, with no
# L3CACHE_LIB or PYTHONPATH, finds the library inside the installed package
# and round-trips a page through a store.
set -eu
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-build-isolation --no-index "$src/python"
cd "$work"
env -u L3CACHE_LIB -u PYTHONPATH "$work/venv/bin/python" - "$work" <<'PY'
import os
import sys

import l3cache

work = sys.argv[1]
lib = l3cache.library_path()
site = os.path.dirname(os.path.abspath(l3cache.__file__))
assert lib == os.path.join(site, "libl3cache.so"), "the library came from %s, not the package" % lib
assert site.startswith(os.path.join(work, "venv")), "l3cache was imported from %s" % site
with l3cache.Store({"store": {"path": os.path.join(work, "t.l3"), "capacity": "64MiB",
                              "slab_size": "4MiB"}}) as store, l3cache.Pool(1 << 21) as pool:
    pool.array[:65536] = 7
    assert store.batch_put_from(["page"], pool.address, [0], [65536]) == [True]
    assert store.batch_get_into(["page"], pool.address, [65536], [65536]) == [True]
    assert (pool.array[65536:131072] == 7).all()
for adapter in ("l3cache.sglang", "l3cache.sglang.chain", "l3cache.lmcache", "l3cache.vllm"):  # (lmcache_plugin: inside LMCache)
    __import__(adapter)
print("python_install_test: ok,", lib)
PY
