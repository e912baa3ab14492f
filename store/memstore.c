#include "l3_memstore.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "l3_keys.h"

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    char *key;
    size_t size;
    uint8_t *bytes;
} entry;

struct l3_memstore {
    l3_store base;
    pthread_rwlock_t lock;
    entry **buckets;
    size_t nbuckets;
    size_t count;
};

static entry **find(l3_memstore *m, const char *key, uint64_t hash)
{
    entry **slot = &m->buckets[hash & (m->nbuckets - 1)];
    while (*slot && ((*slot)->hash != hash || strcmp((*slot)->key, key) != 0))
        slot = &(*slot)->next;
    return slot;
}

static bool grow(l3_memstore *m)
{
    size_t n = m->nbuckets * 2;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, so a pointer's size */
    entry **b = calloc(n, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (entry *e = m->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return true;
}

static l3_status check_keys(const char *const *keys, size_t n, l3_error *err)
{
    for (size_t i = 0; i < n; i++) {
        l3_status st = l3_key_check(keys[i], err);
        if (st != L3_OK)
            return st;
    }
    return L3_OK;
}

static l3_status mem_exists(l3_store *s, const char *const *keys, size_t n, bool *flags,
                            l3_error *err)
{
    l3_memstore *m = (l3_memstore *)s;
    l3_status st = check_keys(keys, n, err);
    if (st != L3_OK)
        return st;
    pthread_rwlock_rdlock(&m->lock);
    for (size_t i = 0; i < n; i++)
        flags[i] = *find(m, keys[i], l3_hash64(keys[i], strlen(keys[i]))) != NULL;
    pthread_rwlock_unlock(&m->lock);
    return L3_OK;
}

/* The result's lengths after a batch of n keys (an empty one may come
 * with no result). */
static void set_filled(l3_io_result *r, size_t n)
{
    if (!r)
        return;
    r->success_len = r->object_failures_len = n;
    r->retired = true;
}

static l3_status mem_get(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                         const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_memstore *m = (l3_memstore *)s;
    l3_status st = check_keys(keys, n, err);
    if (st == L3_OK)
        st = l3_check_ranges(host, ranges, n, err);
    if (st != L3_OK)
        return st;
    pthread_rwlock_rdlock(&m->lock);
    for (size_t i = 0; i < n; i++) {
        entry *e = *find(m, keys[i], l3_hash64(keys[i], strlen(keys[i])));
        bool ok = e && e->size == ranges[i].size;
        if (ok)
            memcpy(host.base + ranges[i].offset, e->bytes, e->size);
        r->success[i] = ok;
        r->object_failures[i] = !ok;
    }
    pthread_rwlock_unlock(&m->lock);
    set_filled(r, n);
    return L3_OK;
}

static l3_status mem_put(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                         const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_memstore *m = (l3_memstore *)s;
    l3_status st = check_keys(keys, n, err);
    if (st == L3_OK)
        st = l3_check_ranges(host, ranges, n, err);
    if (st != L3_OK)
        return st;
    pthread_rwlock_wrlock(&m->lock);
    for (size_t i = 0; i < n; i++) {
        uint64_t hash = l3_hash64(keys[i], strlen(keys[i]));
        entry **slot = find(m, keys[i], hash);
        bool ok = true;
        if (!*slot) {
            entry *e = calloc(1, sizeof *e);
            char *key = strdup(keys[i]);
            uint8_t *bytes = malloc(ranges[i].size ? ranges[i].size : 1);
            if (!e || !key || !bytes) {
                free(e);
                free(key);
                free(bytes);
                ok = false; /* a rejected allocation: a retired failure of this key */
            } else {
                memcpy(bytes, host.base + ranges[i].offset, ranges[i].size);
                *e = (entry){ .hash = hash, .key = key, .size = ranges[i].size, .bytes = bytes };
                *slot = e;
                if (++m->count > m->nbuckets)
                    grow(m);
            }
        }
        r->success[i] = ok;
        r->object_failures[i] = false;
    }
    pthread_rwlock_unlock(&m->lock);
    set_filled(r, n);
    return L3_OK;
}

static bool mem_remove(l3_store *s, const char *prefix)
{
    l3_memstore *m = (l3_memstore *)s;
    size_t plen = strlen(prefix);
    pthread_rwlock_wrlock(&m->lock);
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (entry **slot = &m->buckets[i]; *slot;) {
            entry *e = *slot;
            if (strncmp(e->key, prefix, plen) == 0) {
                *slot = e->next;
                free(e->key);
                free(e->bytes);
                free(e);
                m->count--;
            } else {
                slot = &e->next;
            }
        }
    }
    pthread_rwlock_unlock(&m->lock);
    return true;
}

static l3_status mem_delete(l3_store *s, const char *const *keys, size_t n, bool *deleted, l3_error *err)
{
    l3_memstore *m = (l3_memstore *)s;
    l3_status st = check_keys(keys, n, err);
    if (st != L3_OK)
        return st;
    pthread_rwlock_wrlock(&m->lock);
    for (size_t i = 0; i < n; i++) {
        entry **slot = find(m, keys[i], l3_hash64(keys[i], strlen(keys[i])));
        entry *e = *slot;
        deleted[i] = e != NULL;
        if (!e)
            continue;
        *slot = e->next;
        free(e->key);
        free(e->bytes);
        free(e);
        m->count--;
    }
    pthread_rwlock_unlock(&m->lock);
    return L3_OK;
}

static void mem_close(l3_store *s) { (void)s; }
static bool mem_failures_retire(l3_store *s) { (void)s; return true; }
static void mem_destroy(l3_store *s) { l3_memstore_free((l3_memstore *)s); }

static const l3_store_ops mem_ops = {
    .batch_exists = mem_exists,
    .batch_get_into = mem_get,
    .batch_put_from = mem_put,
    .remove_by_prefix = mem_remove,
    .batch_delete = mem_delete,
    .close = mem_close,
    .failures_retire = mem_failures_retire,
    .destroy = mem_destroy,
};

l3_memstore *l3_memstore_new(void)
{
    l3_memstore *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nbuckets = 64;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, so a pointer's size */
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    m->base.ops = &mem_ops;
    pthread_rwlock_init(&m->lock, NULL);
    return m;
}

l3_store *l3_memstore_store(l3_memstore *m) { return &m->base; }

size_t l3_memstore_count(l3_memstore *m)
{
    pthread_rwlock_rdlock(&m->lock);
    size_t n = m->count;
    pthread_rwlock_unlock(&m->lock);
    return n;
}

void l3_memstore_free(l3_memstore *m)
{
    if (!m)
        return;
    mem_remove(&m->base, "");
    free(m->buckets);
    pthread_rwlock_destroy(&m->lock);
    free(m);
}
