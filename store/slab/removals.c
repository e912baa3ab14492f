/* The removal feed's public face (l3_slabstore.h): key identities, names
 * of reasons, and readers' cursors over the mapping's feed (feed.h). */
#include <string.h>

#include "feed.h"
#include "slab.h"

/* The public bytes of an identity (L3_KEY_ID_BYTES): its hash and length,
 * what the index keeps of a key (not its crc32c: index.h). */
static void pack_id(l3_key_id id, uint8_t out[L3_KEY_ID_BYTES])
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(id.hash >> (8 * i));
    out[8] = out[9] = out[10] = out[11] = 0;
    out[12] = (uint8_t)id.len;
    out[13] = (uint8_t)(id.len >> 8);
    out[14] = out[15] = 0;
}

void l3_key_id_bytes(const char *key, size_t len, uint8_t out[L3_KEY_ID_BYTES])
{
    pack_id(l3_key_identity(key, len), out);
}

const char *l3_removal_reason_name(uint32_t reason)
{
    static const char *const names[] = { "unknown", "evicted", "deleted", "namespace", "corrupt", "lost", "group" };
    return reason < sizeof names / sizeof names[0] ? names[reason] : "unknown";
}

uint64_t l3_slabstore_removal_start(l3_slabstore *s, bool oldest)
{
    if (s->closed || !s->sh)
        return 0;
    return l3_feed_start(&s->feed, oldest);
}

size_t l3_slabstore_removals(l3_slabstore *s, uint64_t *cursor, l3_removal *out, size_t max, uint64_t *missed)
{
    if (s->closed || !s->sh || !cursor || !out || !missed)
        return 0;
    l3_feed_item items[256];
    size_t got = 0;
    while (got < max) {
        size_t want = max - got < 256 ? max - got : 256;
        size_t n = l3_feed_read(&s->feed, cursor, items, want, missed);
        for (size_t i = 0; i < n; i++) {
            l3_removal *r = &out[got + i];
            memset(r, 0, sizeof *r);
            r->seq = items[i].seq;
            r->reason = items[i].reason;
            pack_id(items[i].id, r->key_id);
        }
        got += n;
        if (n < want)
            break;
    }
    return got;
}
