/* The executor's namespace (namespace.h): the prefix objects are named
 * under, an object key, and the namespace switched or removed once idle. */
#include "namespace.h"

#include <stdio.h>
#include <string.h>

l3_status l3_exec_namespace_prefix(const char *deployment_id, bool has_draft,
                                   const char *weight_version, char out[L3_KEY_PREFIX_LEN + 1],
                                   l3_error *err)
{
    if (!weight_version)
        return l3_fail(err, L3_EINVAL, "the weight version is NULL");
    return l3_key_prefix(deployment_id, weight_version, has_draft ? weight_version : "", out, err);
}

void l3_executor_key_prefix(l3_executor *e, char out[L3_KEY_PREFIX_LEN + 1])
{
    pthread_mutex_lock(&e->prefix_mu);
    memcpy(out, e->prefix, L3_KEY_PREFIX_LEN + 1);
    pthread_mutex_unlock(&e->prefix_mu);
}

l3_status l3_exec_key_of(l3_executor *e, const char *prefix, const l3_storage_key *key, char *out,
                         size_t out_size, l3_error *err)
{
    uint32_t rank;
    l3_status st = l3_layout_key_rank(&e->layout, key->group, &rank, err);
    if (st != L3_OK)
        return st;
    if (!key->content_hash)
        return l3_fail(err, L3_EINVAL, "invalid L3 job: a key has no content hash");
    return l3_object_key(prefix, key->content_hash, key->group, key->page_offset, rank, out,
                         out_size, err);
}

l3_status l3_executor_object_key(l3_executor *e, const l3_storage_key *key, char *out,
                                 size_t out_size, l3_error *err)
{
    char prefix[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, prefix);
    return l3_exec_key_of(e, prefix, key, out, out_size, err);
}

l3_status l3_executor_set_weight_version(l3_executor *e, const char *weight_version, l3_error *err)
{
    if (!l3_executor_is_idle(e))
        return l3_fail(err, L3_EBUSY, "L3 operations must retire before the namespace changes");
    char prefix[L3_KEY_PREFIX_LEN + 1];
    l3_status st = l3_exec_namespace_prefix(e->deployment_id, e->has_draft, weight_version, prefix, err);
    if (st != L3_OK)
        return st;
    pthread_mutex_lock(&e->prefix_mu);
    memcpy(e->prefix, prefix, sizeof prefix);
    pthread_mutex_unlock(&e->prefix_mu);
    return L3_OK;
}

bool l3_executor_delete_namespace(l3_executor *e)
{
    if (!l3_executor_is_idle(e))
        return false;
    char ns[L3_KEY_PREFIX_LEN + 1], prefix[L3_KEY_PREFIX_LEN + 2];
    l3_executor_key_prefix(e, ns);
    snprintf(prefix, sizeof prefix, "%s_", ns);
    return e->store->ops->remove_by_prefix(e->store, prefix);
}
