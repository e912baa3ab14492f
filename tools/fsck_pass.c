/* One pass's objects (fsck_pass.h): room for them, their namespaces'
 * texts interned, the tables by key and by slot, the passes planned within
 * --memory, and of two live objects of one key the one the rules serve. */
#include "fsck_pass.h"

#include <stdlib.h>
#include <string.h>

#include "fsck_io.h"

bool fsck_grow_objects(fsck *f)
{
    size_t cap = f->cap_objects ? 2 * f->cap_objects : 1024;
    fsck_object *o = realloc(f->objects, cap * sizeof *o);
    if (o)
        f->objects = o;
    /* The tables keep a load of at most 1/2 (rebuilt each pass: nothing to keep). */
    size_t tcap = f->table_cap < 1024 ? 1024 : f->table_cap;
    while (tcap < 2 * cap)
        tcap <<= 1;
    uint32_t *k = tcap > f->table_cap ? realloc(f->by_key, tcap * sizeof *k) : f->by_key;
    f->by_key = k ? k : f->by_key;
    uint32_t *sl = tcap > f->table_cap ? realloc(f->by_slot, tcap * sizeof *sl) : f->by_slot;
    f->by_slot = sl ? sl : f->by_slot;
    if (!o || !k || !sl) {
        fsck_problem(f, false, "out of memory listing objects");
        return false;
    }
    f->cap_objects = cap;
    f->table_cap = tcap;
    return true;
}

const char *fsck_intern_ns(fsck *f, const char *text, uint16_t len)
{
    size_t last = f->ns_last; /* the one asked for last: objects come in runs of one namespace */
    if (last < f->num_ns_texts && strlen(f->ns_texts[last]) == len && memcmp(f->ns_texts[last], text, len) == 0)
        return f->ns_texts[last];
    for (size_t j = 0; j < f->num_ns_texts; j++)
        if (strlen(f->ns_texts[j]) == len && memcmp(f->ns_texts[j], text, len) == 0)
            return f->ns_texts[f->ns_last = j];
    char **grown = realloc(f->ns_texts, (f->num_ns_texts + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    f->ns_texts = grown;
    f->ns_last = f->num_ns_texts;
    return f->ns_texts[f->num_ns_texts++] = strndup(text, len);
}

uint64_t fsck_used_slots(fsck *f)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < f->geo.num_slabs; i++)
        if (l3_slab_in_use(&f->table[i], i, f->sb.epoch))
            n += l3_slots_per_slab(&f->geo, f->table[i].payload_blocks);
    return n;
}

/* Whether an object is a whole copy (read from the image; the rules'
 * l3_object_image_checks). */
static bool object_checks(fsck *f, const fsck_object *o)
{
    size_t hb = f->geo.header_bytes, len = hb + l3_round_up(o->size, f->geo.block_size);
    uint8_t *buf = malloc(len);
    bool ok = buf && fsck_read(f, buf, len, o->offset) == 0 &&
              l3_object_image_checks(buf, (uint32_t)hb, o->size, o->crc);
    free(buf);
    return ok;
}

/* Of two live objects x (indexed) and o of one key, the one the rules
 * serve: the higher sequence unless its payload is torn. */
static bool o_beats_x(fsck *f, const fsck_object *o, const fsck_object *x)
{
    return l3_dup_wins(o->seq, x->seq, object_checks(f, o->seq > x->seq ? o : x));
}

size_t fsck_table_home(const fsck *f, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (f->table_cap - 1);
}

size_t fsck_table_slot(const fsck *f, const uint32_t *t, uint64_t key, size_t i,
                       bool (*same)(const fsck *, size_t, size_t))
{
    size_t p = fsck_table_home(f, key);
    while (t[p] != UINT32_MAX && !same(f, t[p], i))
        p = (p + 1) & (f->table_cap - 1);
    return p;
}

static bool same_key(const fsck *f, size_t a, size_t b)
{
    const fsck_object *x = &f->objects[a], *o = &f->objects[b];
    return x->hash == o->hash && x->key_len == o->key_len;
}

uint64_t fsck_supersede(fsck *f)
{
    uint64_t n = 0;
    memset(f->by_key, 0xff, f->table_cap * sizeof *f->by_key);
    for (size_t i = 0; i < f->num_objects; i++) {
        fsck_object *o = &f->objects[i];
        if (!o->live)
            continue;
        size_t p = fsck_table_slot(f, f->by_key, o->hash, i, same_key);
        if (f->by_key[p] == UINT32_MAX) {
            f->by_key[p] = (uint32_t)i;
            continue;
        }
        fsck_object *x = &f->objects[f->by_key[p]];
        fsck_object *loser = o_beats_x(f, o, x) ? x : o;
        loser->live = false;
        n++;
        if (loser == x)
            f->by_key[p] = (uint32_t)i;
    }
    return n;
}

bool fsck_plan_passes(fsck *f)
{
    /* A pass's object and its two table slots (at a load of at most 1/2). */
    uint64_t slots = fsck_used_slots(f), per = sizeof(fsck_object) + 4 * sizeof(uint32_t);
    uint64_t need = slots * per;
    f->parts = f->headers || need <= f->memory ? 1 : (uint32_t)((need + f->memory - 1) / f->memory);
    f->cap_objects = (size_t)(slots / f->parts + slots / f->parts / 16 + 1024); /* a hash range's skew */
    f->table_cap = 1024;
    while (f->table_cap < 2 * f->cap_objects)
        f->table_cap <<= 1;
    f->objects = malloc(f->cap_objects * sizeof *f->objects);
    f->by_key = malloc(f->table_cap * sizeof *f->by_key);
    f->by_slot = malloc(f->table_cap * sizeof *f->by_slot);
    if (!f->objects || !f->by_key || !f->by_slot) {
        fsck_problem(f, false, "out of memory for %zu objects a pass", f->cap_objects);
        return false;
    }
    return true;
}
