/* The allocator (store/slab/alloc.c) over a store's state in memory, no
 * disk, with a mock policy (mock_policy.c) choosing its victims:
 * namespaces, slots and size classes, standby slabs, eviction, the index
 * bound, reservations (pinned, released, a dead process's reaped), the
 * victim reinsertion takes, fills a checkpoint restores, adopted records,
 * a failed device's slabs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc.h"
#include "mock_policy.h"
#include "slab_mem.h"

#define SLAB (1u << 20)
#define PB16 16u /* a 64 KiB object's class */

static int setup(void **state)
{
    mock_policy_reset();
    *state = slab_mem_new(8, SLAB, 0);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    slab_mem_free(*state);
    return 0;
}

static void namespaces_are_interned_and_reused_when_empty(void **state)
{
    l3_slabstore *s = *state;
    /* A put holds its key's namespace (reserved) until it is published. */
    int a = l3_alloc_ns_intern(s, "ns1_x", 5);
    s->ns[a - 1].reserved++;
    int b = l3_alloc_ns_intern(s, "ns2_y", 5);
    s->ns[b - 1].reserved++;
    assert_true(a > 0 && b > 0 && a != b);
    assert_string_equal(s->ns[a - 1].text, "ns1_");
    assert_int_equal(l3_alloc_ns_intern(s, "ns1_other", 9), a);
    assert_int_equal(l3_alloc_ns_intern(s, "nonamespace", 11), 0);
    /* A full table: -1. */
    char key[32];
    int id = 0;
    for (int i = 0; id >= 0 && i < (int)L3_MAX_NAMESPACES + 1; i++) {
        snprintf(key, sizeof key, "n%d_k", i);
        id = l3_alloc_ns_intern(s, key, strlen(key));
        if (id > 0)
            s->ns[id - 1].reserved++;
    }
    assert_int_equal(id, -1);
    /* A namespace with no object and no put in flight is reused. */
    s->ns[b - 1].reserved = 0;
    int again = l3_alloc_ns_intern(s, "fresh_k", 7);
    assert_int_equal(again, b);
    assert_string_equal(s->ns[again - 1].text, "fresh_");
}

/* Reserve `n` slots of class pb, giving each back at once. */
static void reserve(l3_slabstore *s, uint32_t pb, uint32_t n, uint32_t *slab, uint32_t *slot)
{
    for (uint32_t i = 0; i < n; i++) {
        assert_true(l3_alloc_slot(s, pb, LOG_MAIN, &slab[i], &slot[i]));
        l3_alloc_release(s, slab[i]);
    }
}

static void a_class_fills_its_open_slab_then_opens_another(void **state)
{
    l3_slabstore *s = *state;
    uint32_t per = l3_slots_per_slab(&s->geo, PB16);
    uint32_t slab[64], slot[64];
    assert_true(per + 1 <= 64);
    reserve(s, PB16, per + 1, slab, slot);
    for (uint32_t i = 0; i < per; i++) {
        assert_int_equal(slab[i], slab[0]);
        assert_int_equal(slot[i], i);
    }
    assert_int_not_equal(slab[per], slab[0]);
    assert_int_equal(slot[per], 0);
    assert_int_equal(s->slabs[slab[0]].state, S_SEALED);
    assert_int_equal(s->slabs[slab[per]].state, S_OPEN);
    assert_int_equal(*l3_class_open(s, LOG_MAIN, PB16, 0), (int32_t)slab[per]);
    /* Each reopened slab got a new generation and its record in the image. */
    const l3_slab_record *r = &s->table[slab[per]];
    assert_true(l3_slab_record_valid(r, slab[per]));
    assert_int_equal(r->gen, s->slabs[slab[per]].gen);
    assert_int_equal(r->payload_blocks, PB16);
    assert_int_equal(s->slabs[slab[per]].record_gen, 0); /* not on disk yet: its first writer writes it */
    assert_int_equal(mock_written_calls, 2);
    /* Another class opens a slab of its own. */
    uint32_t one_slab, one_slot;
    reserve(s, 1, 1, &one_slab, &one_slot);
    assert_true(one_slab != slab[0] && one_slab != slab[per]);
    assert_int_equal(s->slabs[one_slab].payload_blocks, 1);
}

static void reservations_pin_their_slab_until_released(void **state)
{
    l3_slabstore *s = *state;
    uint32_t a, b, sa, sb;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &a, &sa));
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &b, &sb));
    assert_int_equal(a, b);
    assert_int_equal(s->slabs[a].inflight, 2);
    const l3_proc_account *me = &s->sh->alloc.procs[s->shm.me];
    assert_int_equal(me->npins, 1);
    assert_int_equal(me->pins[0].slab, a);
    assert_int_equal(me->pins[0].count, 2);
    assert_int_equal(s->sh->alloc.reserved, 2);
    assert_int_equal(s->sh->alloc.procs[s->shm.me].reserved, 2);
    l3_alloc_release(s, a);
    l3_alloc_release(s, b);
    assert_int_equal(s->slabs[a].inflight, 0);
    assert_int_equal(s->sh->alloc.reserved, 0);
    assert_int_equal(s->sh->alloc.procs[s->shm.me].reserved, 0);
    assert_int_equal(me->npins, 0);
}

static void a_dead_process_s_reservations_are_reaped(void **state)
{
    l3_slabstore *s = *state;
    uint32_t a, sa;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &a, &sa));
    l3_alloc_release(s, a);
    /* Slot 1 of the process table: used by a process whose `alive` mutex
     * nobody holds (it died), holding two slots of slab a. */
    int dead = 1;
    s->sh->procs[dead].used = 1;
    s->sh->procs[dead].pid = 12345;
    s->sh->attached++;
    s->sh->alloc.procs[dead].pins[0] = (l3_proc_pin){ .slab = a, .count = 2 };
    s->sh->alloc.procs[dead].npins = 1;
    s->slabs[a].inflight += 2;
    s->sh->alloc.reserved += 2;
    s->sh->alloc.procs[dead].reserved = 2;
    assert_int_equal(l3_alloc_reap_dead(s), 1);
    assert_int_equal(s->slabs[a].inflight, 0);
    assert_int_equal(s->sh->alloc.procs[dead].npins, 0);
    assert_int_equal(s->sh->alloc.reserved, 0);
    assert_false(s->sh->procs[dead].used);
    assert_int_equal(l3_alloc_reap_dead(s), 0); /* once */
}

/* A process pins at most L3_PROC_PINS slabs by slab: a reservation past
 * them is counted untracked and given back by its release; if the process
 * dies holding it, its slab stays pinned (what it reserved there is not
 * known), the rest of its account is given back. */
static void reservations_past_a_process_s_pins_are_untracked(void **state)
{
    l3_slabstore *s = *state;
    uint32_t a, sa;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &a, &sa));
    l3_alloc_release(s, a);
    l3_proc_account *me = &s->sh->alloc.procs[s->shm.me];
    for (uint32_t k = 0; k < L3_PROC_PINS; k++)
        me->pins[k] = (l3_proc_pin){ .slab = UINT32_MAX - k, .count = 1 }; /* (not slabs: never released) */
    me->npins = L3_PROC_PINS;
    l3_alloc_pin(s, a);
    assert_int_equal(me->untracked, 1);
    assert_int_equal(s->slabs[a].inflight, 1);
    l3_alloc_release(s, a);
    assert_int_equal(me->untracked, 0);
    assert_int_equal(s->slabs[a].inflight, 0);
    assert_int_equal(me->npins, L3_PROC_PINS);
    me->npins = 0;
    me->reserved = 0;

    int dead = 1;
    s->sh->procs[dead].used = 1;
    s->sh->procs[dead].pid = 12345;
    s->sh->attached++;
    s->sh->alloc.procs[dead] = (l3_proc_account){ .reserved = 1, .untracked = 1 };
    s->slabs[a].inflight = 1;
    s->sh->alloc.reserved = 1;
    assert_int_equal(l3_alloc_reap_dead(s), 1);
    assert_int_equal(s->slabs[a].inflight, 1);
    assert_int_equal(s->sh->alloc.reserved, 0);
    assert_int_equal(s->sh->alloc.procs[dead].untracked, 0);
}

static void eviction_drops_a_slab_s_objects_and_frees_it(void **state)
{
    l3_slabstore *s = *state;
    uint32_t slab[3], slot[3];
    reserve(s, PB16, 3, slab, slot);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "obj%d", i);
        slab_mem_publish(s, name, slab[i], slot[i], 65536);
    }
    assert_int_equal(s->index.meta->count, 3);
    assert_int_equal(s->slabs[slab[0]].live, 3);
    l3_alloc_evict(s, slab[0]);
    assert_int_equal(s->index.meta->count, 0);
    assert_int_equal(s->slabs[slab[0]].live, 0);
    assert_int_equal(s->slabs[slab[0]].state, S_FREE);
    assert_int_equal(*l3_class_open(s, LOG_MAIN, PB16, 0), -1);
    assert_int_equal(atomic_load(&s->evictions), 1);
    assert_int_equal(atomic_load(&s->evicted_objects), 3);
}

static void writers_move_on_to_standby_slabs_opened_ahead(void **state)
{
    l3_slabstore *s = *state;
    uint32_t first, slot;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &first, &slot)); /* the class's open slab; one in flight */
    int32_t out[L3_STANDBY_MAX];
    uint64_t gens[L3_STANDBY_MAX];
    uint32_t n = l3_alloc_standby(s, first, out, gens, L3_STANDBY_MAX);
    assert_true(n >= 1);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_not_equal(out[i], (int32_t)first);
        assert_int_equal(s->slabs[out[i]].state, S_OPEN);
        assert_int_equal(s->slabs[out[i]].next_slot, 0);
        assert_int_equal(gens[i], s->slabs[out[i]].gen);
    }
    assert_int_equal(*l3_class_next(s, LOG_MAIN, PB16, 0), out[0]);
    l3_alloc_release(s, first);
    /* Fill the open slab: the next writer moves to the first standby
     * without asking the policy for a victim. */
    uint32_t per = l3_slots_per_slab(&s->geo, PB16), sl[64], so[64];
    reserve(s, PB16, per - 1, sl, so);
    size_t asked = mock_victim_calls;
    uint32_t next, nslot;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &next, &nslot));
    l3_alloc_release(s, next);
    assert_int_equal(next, (uint32_t)out[0]);
    assert_int_equal(mock_victim_calls, asked);
    /* Evicting a standby takes it out of the chain. */
    if (n > 1) {
        l3_alloc_evict(s, (uint32_t)out[1]);
        assert_int_not_equal(*l3_class_next(s, LOG_MAIN, PB16, 0), out[1]);
    }
}

static void the_index_bound_evicts_whole_slabs(void **state)
{
    l3_slabstore *s = *state;
    s->index.meta->max = 4; /* an index bound of four objects */
    uint64_t max = s->index.meta->max;
    uint32_t slab[64], slot[64];
    assert_true(max + 1 <= 64);
    reserve(s, 1, (uint32_t)max, slab, slot);
    for (uint64_t i = 0; i < max; i++) {
        char name[32];
        snprintf(name, sizeof name, "b%llu", (unsigned long long)i);
        slab_mem_publish(s, name, slab[i], slot[i], 4096);
    }
    /* The index is at its bound: the next slot costs the policy's victim. */
    mock_victim((int32_t)slab[0]);
    uint32_t v, vs;
    assert_true(l3_alloc_slot(s, 1, LOG_MAIN, &v, &vs));
    l3_alloc_release(s, v);
    assert_int_equal(atomic_load(&s->index_bound_evictions), 1);
    assert_true(s->index.meta->count < max);
    /* With no victim to give, no slot. */
    s->index.meta->count = max;
    assert_false(l3_alloc_slot(s, 1, LOG_MAIN, &v, &vs));
}

static void the_victim_reinsertion_takes_is_sealed_and_pinned(void **state)
{
    l3_slabstore *s = *state;
    uint32_t a, sa;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &a, &sa));
    l3_alloc_release(s, a);
    slab_mem_publish(s, "kept", a, sa, 65536);
    mock_victim((int32_t)a);
    assert_int_equal(l3_alloc_take_victim(s), (int32_t)a);
    assert_int_equal(s->slabs[a].state, S_SEALED);
    assert_int_equal(*l3_class_open(s, LOG_MAIN, PB16, 0), -1);
    assert_int_equal(s->slabs[a].inflight, 1);
    l3_alloc_release(s, a);
    assert_int_equal(s->slabs[a].inflight, 0);
    assert_int_equal(l3_alloc_take_victim(s), -1); /* none scripted, none with live objects */
}

static void a_checkpoint_restores_fills_and_one_open_slab_a_class(void **state)
{
    l3_slabstore *s = *state;
    l3_slab_record r = { .slab = 0, .state = L3_SLAB_USED, .gen = 7, .payload_blocks = PB16 };
    for (uint32_t i = 0; i < 3; i++) {
        r.slab = i;
        l3_slab_record_seal(&r);
        assert_int_equal(l3_alloc_adopt(s, i, &r, NULL), L3_OK);
        assert_int_equal(s->slabs[i].state, S_SEALED);
        assert_int_equal(s->slabs[i].gen, 7);
    }
    l3_alloc_restore_fill(s, 0, 0, true, false);
    assert_int_equal(s->slabs[0].state, S_FREE);
    l3_alloc_restore_fill(s, 1, 3, false, true);
    assert_int_equal(s->slabs[1].state, S_OPEN);
    assert_int_equal(s->slabs[1].next_slot, 3);
    assert_int_equal(*l3_class_open(s, LOG_MAIN, PB16, 0), 1);
    l3_alloc_restore_fill(s, 2, 2, false, true); /* a second open one of the class stays sealed */
    assert_int_equal(s->slabs[2].state, S_SEALED);
    assert_int_equal(*l3_class_open(s, LOG_MAIN, PB16, 0), 1);
    /* A record of a class that does not fit a slab is refused. */
    r.payload_blocks = s->sh->max_payload_blocks + 1;
    l3_slab_record_seal(&r);
    assert_int_equal(l3_alloc_adopt(s, 3, &r, NULL), L3_ECORRUPT);
}

static void a_failed_device_s_slabs_go_offline_with_their_objects(void **state)
{
    l3_slabstore *s = *state;
    uint32_t a, sa;
    assert_true(l3_alloc_slot(s, PB16, LOG_MAIN, &a, &sa));
    l3_alloc_release(s, a);
    slab_mem_publish(s, "gone", a, sa, 65536);
    atomic_fetch_or(&s->sh->failed_mask, 1u);
    atomic_store(&s->sh->dev_state[0], DEV_FAILED);
    assert_true(l3_alloc_sweep_due(s));
    l3_alloc_sweep_failed(s);
    assert_false(l3_alloc_sweep_due(s));
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        assert_int_equal(s->slabs[i].state, S_OFFLINE);
    assert_int_equal(s->index.meta->count, 0);
    uint32_t v, vs;
    assert_false(l3_alloc_slot(s, PB16, LOG_MAIN, &v, &vs)); /* nowhere to put anything */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(namespaces_are_interned_and_reused_when_empty),
        T(a_class_fills_its_open_slab_then_opens_another),
        T(reservations_pin_their_slab_until_released),
        T(a_dead_process_s_reservations_are_reaped),
        T(reservations_past_a_process_s_pins_are_untracked),
        T(eviction_drops_a_slab_s_objects_and_frees_it),
        T(writers_move_on_to_standby_slabs_opened_ahead),
        T(the_index_bound_evicts_whole_slabs),
        T(the_victim_reinsertion_takes_is_sealed_and_pinned),
        T(a_checkpoint_restores_fills_and_one_open_slab_a_class),
        T(a_failed_device_s_slabs_go_offline_with_their_objects),
    };
    return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
