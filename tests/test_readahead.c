/* The read-ahead (lib/readahead.h): items come in order, each in its own
 * buffer, never more than the ring ahead of the consumer; the end of the
 * items; a read's failure ends the reading after the items before it; a
 * consumer that stops early stops the readers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "l3_pool.h"
#include "readahead.h"

#define BYTES 8192

/* A device of numbered items: item j's bytes are all (j * 7 + 1) & 0xff. */
typedef struct source {
    unsigned ring;
    atomic_size_t released;   /* what the consumer released (before it tells the read-ahead) */
    atomic_size_t reads;      /* reads started */
    atomic_size_t max_item;   /* the highest item read, plus one */
    atomic_bool ahead_too_far; /* an item was read more than `ring` ahead of the consumer */
    size_t fail_at, fail_too; /* these items' reads fail (SIZE_MAX: none) */
    unsigned delay_ms[8];     /* how long items 0 to 7 take to read (0: no time) */
    size_t first, second;     /* `first` ends once `second` started, `second` once `first` ended */
    atomic_uint started_bits, finished_bits; /* items 0 to 7 whose reads started, ended */
} source;

static uint8_t pattern(size_t j) { return (uint8_t)((j * 7 + 1) & 0xff); }

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static l3_status read_item(void *arg, size_t item, void *buf, l3_error *err)
{
    source *s = arg;
    atomic_fetch_add(&s->reads, 1);
    if (item >= atomic_load(&s->released) + s->ring)
        atomic_store(&s->ahead_too_far, true);
    size_t seen = atomic_load(&s->max_item);
    while (item + 1 > seen && !atomic_compare_exchange_weak(&s->max_item, &seen, item + 1)) {
    }
    if (item < 8)
        atomic_fetch_or(&s->started_bits, 1u << item);
    if (item < 8 && s->delay_ms[item])
        sleep_ms(s->delay_ms[item]);
    while (item == s->first && !(atomic_load(&s->started_bits) >> s->second & 1))
        sleep_ms(1);
    while (item == s->second && !(atomic_load(&s->finished_bits) >> s->first & 1))
        sleep_ms(1);
    l3_status st = item == s->fail_at || item == s->fail_too
                       ? l3_fail(err, L3_EIO, "item %zu: the device said no", item)
                       : L3_OK;
    if (st == L3_OK)
        memset(buf, pattern(item), BYTES);
    if (item < 8)
        atomic_fetch_or(&s->finished_bits, 1u << item);
    return st;
}

static source a_source(unsigned ring)
{
    source s = { .ring = ring, .fail_at = SIZE_MAX, .fail_too = SIZE_MAX, .first = SIZE_MAX, .second = SIZE_MAX };
    return s;
}

static l3_readahead *start(source *s, size_t items, unsigned threads)
{
    l3_readahead_spec spec = { .items = items, .buf_bytes = BYTES, .ring = s->ring, .threads = threads,
                               .read = read_item, .arg = s };
    l3_readahead *ra = NULL;
    l3_error err;
    assert_int_equal(l3_readahead_start(&spec, &ra, &err), L3_OK);
    assert_non_null(ra);
    return ra;
}

/* Whether buf holds item j whole. */
static bool holds(const uint8_t *buf, size_t j)
{
    for (size_t k = 0; k < BYTES; k++)
        if (buf[k] != pattern(j))
            return false;
    return true;
}

static void consume_in_order(unsigned ring, unsigned threads, size_t items)
{
    source s = a_source(ring);
    l3_readahead *ra = start(&s, items, threads);
    for (size_t j = 0; j < items; j++) {
        uint8_t *buf = l3_readahead_get(ra, j);
        assert_non_null(buf);
        assert_true(holds(buf, j));
        if (j % 5 == 0)
            sleep_ms(1); /* let the readers run ahead, as far as the ring lets them */
        atomic_store(&s.released, j + 1);
        l3_readahead_release(ra, j);
    }
    assert_null(l3_readahead_get(ra, items)); /* the end */
    assert_int_equal(l3_readahead_failure(ra, NULL), L3_OK);
    l3_readahead_free(ra, false);
    assert_int_equal(atomic_load(&s.reads), items); /* each item read once */
    assert_false(atomic_load(&s.ahead_too_far));
}

static void items_come_in_order_never_more_than_the_ring_ahead(void **state)
{
    (void)state;
    consume_in_order(2, 1, 40);  /* l3fsck's and the crash scan's shape */
    consume_in_order(4, 2, 41);  /* the checkpoint's: two readers on alternate items */
    consume_in_order(3, 3, 17);
    consume_in_order(8, 1, 3);   /* a ring larger than the items */
}

static void a_consumer_may_hold_items_and_release_several_at_once(void **state)
{
    (void)state;
    source s = a_source(4);
    l3_readahead *ra = start(&s, 12, 2);
    for (size_t j = 0; j < 12; j += 4) {
        uint8_t *bufs[4];
        for (size_t k = 0; k < 4; k++) { /* four held at once: the whole ring */
            bufs[k] = l3_readahead_get(ra, j + k);
            assert_non_null(bufs[k]);
        }
        for (size_t k = 0; k < 4; k++)
            assert_true(holds(bufs[k], j + k));
        atomic_store(&s.released, j + 4);
        l3_readahead_release(ra, j + 3);
    }
    l3_readahead_free(ra, false);
    assert_false(atomic_load(&s.ahead_too_far));
}

static void no_items_is_the_end_at_once(void **state)
{
    (void)state;
    source s = a_source(2);
    l3_readahead *ra = start(&s, 0, 2);
    assert_null(l3_readahead_get(ra, 0));
    assert_int_equal(l3_readahead_failure(ra, NULL), L3_OK);
    l3_readahead_free(ra, false);
    assert_int_equal(atomic_load(&s.reads), 0);
}

static void a_failed_read_ends_the_items_after_the_ones_before_it(void **state)
{
    (void)state;
    for (unsigned threads = 1; threads <= 2; threads++) {
        source s = a_source(4);
        s.fail_at = 5;
        s.delay_ms[4] = 50; /* (two readers: item 5 fails before item 4 lands) */
        l3_readahead *ra = start(&s, 30, threads);
        for (size_t j = 0; j < 5; j++) {
            uint8_t *buf = l3_readahead_get(ra, j);
            assert_non_null(buf);
            assert_true(holds(buf, j));
            atomic_store(&s.released, j + 1);
            l3_readahead_release(ra, j);
        }
        assert_null(l3_readahead_get(ra, 5));
        assert_null(l3_readahead_get(ra, 6));
        l3_error err;
        assert_int_equal(l3_readahead_failure(ra, &err), L3_EIO);
        assert_int_equal(err.code, L3_EIO);
        assert_non_null(strstr(err.msg, "item 5: the device said no"));
        l3_readahead_free(ra, false);
        /* No reader went on past the failure: one item a reader at most. */
        assert_true(atomic_load(&s.max_item) <= 6 + threads);
    }
}

static void of_two_failed_reads_the_lower_item_is_the_one_told(void **state)
{
    (void)state;
    for (size_t first = 5; first >= 4; first--) { /* item 5 fails first, then item 4 does */
        source s = a_source(4);
        s.fail_at = 4;
        s.fail_too = 5; /* (two readers: both under way at once) */
        s.first = first;
        s.second = first == 5 ? 4 : 5;
        l3_readahead *ra = start(&s, 30, 2);
        for (size_t j = 0; j < 4; j++) {
            assert_non_null(l3_readahead_get(ra, j));
            atomic_store(&s.released, j + 1);
            l3_readahead_release(ra, j);
        }
        assert_null(l3_readahead_get(ra, 4));
        l3_readahead_stop(ra); /* both reads were under way: both failures are in */
        l3_error err;
        assert_int_equal(l3_readahead_failure(ra, &err), L3_EIO);
        assert_int_equal(err.code, L3_EIO);
        assert_non_null(strstr(err.msg, "item 4:"));
        l3_readahead_free(ra, false);
        assert_int_equal(atomic_load(&s.reads), 6);
    }
}

static void a_consumer_that_stops_early_stops_the_readers(void **state)
{
    (void)state;
    source s = a_source(3);
    l3_readahead *ra = start(&s, 100000, 2);
    for (size_t j = 0; j < 3; j++) {
        assert_non_null(l3_readahead_get(ra, j));
        atomic_store(&s.released, j + 1);
        l3_readahead_release(ra, j);
    }
    sleep_ms(20); /* the readers fill the ring and wait for buffers */
    l3_readahead_stop(ra); /* returns: they are woken, not left waiting */
    size_t reads = atomic_load(&s.reads);
    assert_true(reads <= 3 + 3);
    assert_false(atomic_load(&s.ahead_too_far));
    uint8_t *last = l3_readahead_get(ra, 5); /* the ring's last: landed or not, not waited for */
    assert_true(!last || holds(last, 5));
    sleep_ms(10);
    assert_int_equal(atomic_load(&s.reads), reads); /* nothing read after the stop */
    l3_readahead_free(ra, false);
}

static void kept_buffers_stay_mapped_after_the_stop(void **state)
{
    (void)state;
    source s = a_source(2);
    l3_readahead *ra = start(&s, 2, 1);
    uint8_t *buf = l3_readahead_get(ra, 0);
    assert_non_null(buf);
    l3_readahead_free(ra, true);
    assert_true(holds(buf, 0)); /* still mapped */
    l3_pool_free(buf, BYTES);   /* (the caller's to unmap, or leave) */
}

static void a_spec_without_a_reader_or_a_ring_is_refused(void **state)
{
    (void)state;
    source s = a_source(2);
    l3_readahead *ra = (l3_readahead *)&s;
    l3_error err;
    l3_readahead_spec none = { .items = 3, .buf_bytes = BYTES, .ring = 2, .threads = 1, .read = NULL };
    assert_int_equal(l3_readahead_start(&none, &ra, &err), L3_EINVAL);
    assert_null(ra);
    l3_readahead_spec no_ring = { .items = 3, .buf_bytes = BYTES, .ring = 0, .threads = 1, .read = read_item };
    assert_int_equal(l3_readahead_start(&no_ring, &ra, &err), L3_EINVAL);
    assert_true(strlen(err.msg) > 0);
    l3_readahead_free(NULL, false); /* a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(items_come_in_order_never_more_than_the_ring_ahead),
        cmocka_unit_test(a_consumer_may_hold_items_and_release_several_at_once),
        cmocka_unit_test(no_items_is_the_end_at_once),
        cmocka_unit_test(a_failed_read_ends_the_items_after_the_ones_before_it),
        cmocka_unit_test(of_two_failed_reads_the_lower_item_is_the_one_told),
        cmocka_unit_test(a_consumer_that_stops_early_stops_the_readers),
        cmocka_unit_test(kept_buffers_stay_mapped_after_the_stop),
        cmocka_unit_test(a_spec_without_a_reader_or_a_ring_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
