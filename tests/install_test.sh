#!/bin/sh
# Install into a scratch prefix, then build and run a program against it
# through pkg-config alone (shared and static).
set -eu
build=$1
prefix=$2
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in lib/libl3cache.so lib/libl3cache.a include/l3cache/l3cache.h bin/l3fsck bin/l3bench \
         lib/pkgconfig/l3cache.pc share/l3cache/python/l3cache/__init__.py; do
  [ -e "$prefix/$f" ] || [ -e "$prefix/$(echo "$f" | sed 's,^lib/,lib/x86_64-linux-gnu/,')" ] || {
    echo "install_test: $f is not installed"; exit 1; }
done
pcdir=$(dirname "$(find "$prefix" -name l3cache.pc | head -n 1)")
libdir=$(dirname "$pcdir")
# Only the public headers are installed, and only the documented API is
# exported: internals (the shared mapping, the index, the engine, the
# tests' fault injection) are not.
for h in "$prefix"/include/l3cache/*.h; do
  case $(basename "$h") in
    l3_*.h|l3cache.h) ;;
    *) echo "install_test: the internal header $(basename "$h") is installed"; exit 1 ;;
  esac
done
exports=$(nm -D --defined-only "$libdir/libl3cache.so" | awk '{print $3}' | sed 's/@.*//')
for internal in l3_shm_attach l3_index_insert l3_io_run l3_alloc_slot l3_slot_judge l3_slabstore_set_fault; do
  if echo "$exports" | grep -qx "$internal"; then
    echo "install_test: the internal symbol $internal is exported"; exit 1
  fi
done
for public in l3_slabstore_open l3_executor_start l3_open_store_json; do
  echo "$exports" | grep -qx "$public" || { echo "install_test: $public is not exported"; exit 1; }
done
cat > "$prefix/use.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <l3cache.h>
int main(void)
{
    char prefix[L3_KEY_PREFIX_LEN + 1];
    if (l3_key_prefix("d", "w", "", prefix, NULL) != L3_OK || strncmp(prefix, "l3v1-", 5) != 0)
        return 1;
    l3_memstore *m = l3_memstore_new();
    const char *key = "ns_k";
    unsigned char pool[8] = "abcdefg";
    bool ok = false, fail = false;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    l3_store_batch_put_from(l3_memstore_store(m), &key, 1, (l3_host_buffer){ pool, 8 },
                            &(l3_range){ 0, 8 }, &r, NULL);
    l3_memstore_free(m);
    printf("%s %d\n", prefix, ok);
    return ok ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$pcdir"
cc -o "$prefix/use" "$prefix/use.c" $(pkg-config --cflags --libs l3cache)
LD_LIBRARY_PATH="$libdir" "$prefix/use"
cc -o "$prefix/use-static" "$prefix/use.c" $(pkg-config --cflags l3cache) "$libdir/libl3cache.a" \
  $(pkg-config --libs --static l3cache | sed 's/-ll3cache//')
"$prefix/use-static"
echo "install_test: ok"
