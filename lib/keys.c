#include "l3_keys.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

l3_status l3_key_prefix(const char *deployment_id, const char *weight_version,
                        const char *draft_weight_version, char out[L3_KEY_PREFIX_LEN + 1],
                        l3_error *err)
{
    if (!deployment_id || !weight_version || !draft_weight_version)
        return l3_fail(err, L3_EINVAL, "a namespace field is NULL");
    json_t *obj = json_object();
    json_t *d = json_string(deployment_id), *w = json_string(weight_version),
           *x = json_string(draft_weight_version);
    if (!obj || !d || !w || !x) {
        json_decref(obj);
        json_decref(d);
        json_decref(w);
        json_decref(x);
        return l3_fail(err, L3_EINVAL, "namespace fields must be UTF-8 text");
    }
    json_object_set_new(obj, "deployment_id", d);
    json_object_set_new(obj, "weight_version", w);
    json_object_set_new(obj, "draft_weight_version", x);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    json_decref(obj);
    if (!text)
        return l3_fail(err, L3_ENOMEM, "rendering the namespace");
    uint8_t digest[32];
    l3_sha256(text, strlen(text), digest);
    free(text);
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "l3v1-", 5);
    for (int i = 0; i < 32; i++) {
        out[5 + 2 * i] = hex[digest[i] >> 4];
        out[6 + 2 * i] = hex[digest[i] & 15];
    }
    out[L3_KEY_PREFIX_LEN] = '\0';
    return L3_OK;
}

/* An appender over a fixed buffer: `len` counts every byte asked for, so
 * an overflow shows at the end. Keys are formatted once per key of every
 * operation: plain copies, not snprintf's format parsing. */
typedef struct key_buf {
    char *out;
    size_t size, len;
} key_buf;

static void put_bytes(key_buf *b, const char *s, size_t n)
{
    if (b->len < b->size)
        memcpy(b->out + b->len, s, b->size - b->len < n ? b->size - b->len : n);
    b->len += n;
}

/* `v` in decimal, a minus sign first when negative. */
static void put_decimal(key_buf *b, int64_t v)
{
    char digits[24];
    size_t i = sizeof digits;
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        digits[--i] = (char)('0' + m % 10);
    while ((m /= 10) != 0);
    if (v < 0)
        digits[--i] = '-';
    put_bytes(b, digits + i, sizeof digits - i);
}

l3_status l3_object_key(const char *prefix, const char *content_hash, uint32_t group,
                        int32_t page_offset, uint32_t key_rank, char *out, size_t out_size,
                        l3_error *err)
{
    if (!prefix || !content_hash || !out)
        return l3_fail(err, L3_EINVAL, "an object key part is NULL");
    if (!content_hash[0])
        return l3_fail(err, L3_EINVAL, "the content hash is empty");
    /* <prefix>_<content hash>|g<group>|o<page offset>|r<rank> */
    key_buf b = { out, out_size, 0 };
    put_bytes(&b, prefix, strlen(prefix));
    put_bytes(&b, "_", 1);
    put_bytes(&b, content_hash, strlen(content_hash));
    put_bytes(&b, "|g", 2);
    put_decimal(&b, group);
    put_bytes(&b, "|o", 2);
    put_decimal(&b, page_offset);
    put_bytes(&b, "|r", 2);
    put_decimal(&b, key_rank);
    if (b.len >= out_size || b.len > L3_OBJECT_KEY_MAX) {
        if (out_size)
            out[0] = '\0';
        return l3_fail(err, L3_EINVAL, "the object key is longer than %d bytes",
                       b.len >= out_size && out_size - 1 < L3_OBJECT_KEY_MAX ? (int)out_size - 1
                                                                             : L3_OBJECT_KEY_MAX);
    }
    out[b.len] = '\0';
    return L3_OK;
}

l3_status l3_key_check(const char *key, l3_error *err)
{
    if (!key)
        return l3_fail(err, L3_EINVAL, "a key is NULL");
    size_t n = strnlen(key, L3_OBJECT_KEY_MAX + 1);
    if (n == 0)
        return l3_fail(err, L3_EINVAL, "a key is empty");
    if (n > L3_OBJECT_KEY_MAX)
        return l3_fail(err, L3_EINVAL, "a key is longer than %d bytes", L3_OBJECT_KEY_MAX);
    return L3_OK;
}
