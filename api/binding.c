/* The Python binding's entry points (l3_binding.h): a store and an
 * executor from JSON text. */
#include "l3_binding.h"

#include "l3_config.h"

l3_status l3_open_store_json(const char *config_json, l3_slabstore **out, l3_error *err)
{
    l3_config c;
    l3_status st = l3_config_parse(config_json, &c, err);
    if (st != L3_OK)
        return st;
    l3_slab_options o = l3_config_store_options(&c);
    st = l3_slabstore_open(&o, out, err);
    l3_config_free(&c);
    return st;
}

l3_status l3_executor_start_json(l3_store *store, const l3_host_buffer *regions, size_t n,
                                 const char *layout_json, const char *config_json, l3_executor **out,
                                 l3_error *err)
{
    l3_host_layout layout;
    l3_status st = l3_layout_parse_json(layout_json, &layout, err);
    if (st != L3_OK)
        return st;
    l3_config c;
    if ((st = l3_config_parse(config_json, &c, err)) != L3_OK)
        return st;
    l3_namespace ns = { .deployment_id = c.deployment_id, .has_draft = c.has_draft };
    st = l3_executor_start_regions(store, regions, n, &layout, &ns, c.weight_version, &c.executor,
                                   l3_monotonic_clock(), out, err);
    l3_config_free(&c);
    return st;
}
