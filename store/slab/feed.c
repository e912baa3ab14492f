/* l3cache: the removal feed (feed.h). */
#include "feed.h"

#include "invariant.h"

uint64_t l3_feed_slots_for(uint64_t max_objects)
{
    uint64_t want = max_objects / 32, n = 1ull << 14;
    while (n < want && n < (1ull << 17))
        n <<= 1;
    return n;
}

size_t l3_feed_bytes(uint64_t slots) { return (size_t)slots * sizeof(l3_feed_slot); }

void l3_feed_format(l3_feed_head *head, uint64_t slots)
{
    L3_ASSERT(slots && (slots & (slots - 1)) == 0);
    head->mask = slots - 1;
    atomic_store(&head->next, 0);
    for (uint32_t r = 0; r < L3_FEED_REASONS; r++)
        atomic_store(&head->by_reason[r], 0);
}

void l3_feed_announce(l3_feed *f, l3_key_id id, uint32_t reason)
{
    L3_ASSERT(reason > 0 && reason < L3_FEED_REASONS);
    uint64_t n = atomic_load_explicit(&f->head->next, memory_order_relaxed);
    l3_feed_slot *slot = &f->slots[n & f->head->mask];
    /* Sequence lock: the slot reads as unwritten while it changes. */
    atomic_store_explicit(&slot->seq, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&slot->hash, id.hash, memory_order_relaxed);
    uint64_t word = (uint64_t)id.len << 32 | (uint64_t)reason << 48; /* (an identity is its hash and length) */
    atomic_store_explicit(&slot->word, word, memory_order_relaxed);
    atomic_store_explicit(&slot->seq, n + 1, memory_order_release);
    atomic_store_explicit(&f->head->next, n + 1, memory_order_release);
    atomic_fetch_add_explicit(&f->head->by_reason[reason], 1, memory_order_relaxed);
}

uint64_t l3_feed_start(const l3_feed *f, int oldest)
{
    uint64_t next = atomic_load_explicit(&f->head->next, memory_order_acquire);
    uint64_t slots = f->head->mask + 1;
    if (!oldest)
        return next;
    return next > slots ? next - slots : 0;
}

/* Copy removal `n` from its slot; false when the slot holds another one
 * (overwritten, or being written). */
static int copy_slot(const l3_feed *f, uint64_t n, l3_feed_item *out)
{
    l3_feed_slot *slot = &f->slots[n & f->head->mask];
    if (atomic_load_explicit(&slot->seq, memory_order_acquire) != n + 1)
        return 0;
    uint64_t hash = atomic_load_explicit(&slot->hash, memory_order_relaxed);
    uint64_t word = atomic_load_explicit(&slot->word, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&slot->seq, memory_order_relaxed) != n + 1)
        return 0;
    *out = (l3_feed_item){ .seq = n,
                           .id = { .hash = hash, .len = (uint16_t)(word >> 32) },
                           .reason = (uint32_t)(word >> 48) & 0xff };
    return 1;
}

size_t l3_feed_read(const l3_feed *f, uint64_t *cursor, l3_feed_item *out, size_t max, uint64_t *missed)
{
    uint64_t slots = f->head->mask + 1, c = *cursor;
    size_t got = 0;
    while (got < max) {
        uint64_t next = atomic_load_explicit(&f->head->next, memory_order_acquire);
        if (c > next)
            c = next; /* (a cursor of another feed: start over at its end) */
        if (next - c > slots) {
            *missed += next - slots - c;
            c = next - slots;
        }
        if (c == next)
            break;
        if (copy_slot(f, c, &out[got])) {
            got++;
            c++;
            continue;
        }
        /* Overwritten under us: the writers are a ring ahead. */
        next = atomic_load_explicit(&f->head->next, memory_order_acquire);
        uint64_t resume = next > slots ? next - slots + 1 : c + 1;
        if (resume <= c)
            resume = c + 1;
        *missed += resume - c;
        c = resume;
    }
    *cursor = c;
    return got;
}
