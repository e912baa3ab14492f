/* The Host layout as JSON (l3_config.h), for the Python binding. */
#include <stdio.h>
#include <string.h>

#include "fields.h"
#include "l3_config.h"

l3_status l3_layout_parse_json(const char *text, l3_host_layout *l, l3_error *err)
{
    memset(l, 0, sizeof *l);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return l3_fail(err, L3_ELAYOUT, "layout: line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    static const char *const known[] = { "groups", "lcm_block_bytes", "num_lcm_blocks", "owner_rank",
                                         "tp_rank", NULL };
    l3_status st = l3_json_section(root, "$", known, err);
    uint64_t u;
    json_t *groups = json_object_get(root, "groups");
    if (st == L3_OK && (!json_is_array(groups) || json_array_size(groups) == 0 ||
                        json_array_size(groups) > L3_MAX_GROUPS))
        st = l3_fail(err, L3_ELAYOUT, "$.groups: expected an array of 1 to %d groups", L3_MAX_GROUPS);
    for (size_t g = 0; st == L3_OK && g < json_array_size(groups); g++) {
        static const char *const gk[] = { "packing", "block_bytes", "shard_count", "region", NULL };
        char path[64];
        snprintf(path, sizeof path, "$.groups[%zu]", g);
        json_t *o = json_array_get(groups, g);
        if ((st = l3_json_section(o, path, gk, err)) != L3_OK)
            break;
        const char *names[] = { "packing", "block_bytes", "shard_count", "region" };
        static const uint64_t lo[] = { 1, 1, 1, 0 }, hi[] = { 1u << 20, 1ull << 40, 1u << 20, L3_MAX_REGIONS - 1 };
        uint64_t vals[4] = { 1, 0, 1, 0 };
        for (int k = 0; k < 4 && st == L3_OK; k++) {
            json_t *v = json_object_get(o, names[k]);
            char fp[96];
            snprintf(fp, sizeof fp, "%s.%s", path, names[k]);
            if (v)
                st = l3_json_uint(v, fp, lo[k], hi[k], &vals[k], err);
            else if (k == 1)
                st = l3_fail(err, L3_ELAYOUT, "%s: required", fp);
        }
        l->groups[g] = (l3_group_layout){ (uint32_t)vals[0], vals[1], (uint32_t)vals[2], (uint32_t)vals[3] };
    }
    l->num_groups = json_array_size(groups);
    const char *names[] = { "lcm_block_bytes", "num_lcm_blocks", "owner_rank", "tp_rank" };
    for (int k = 0; k < 4 && st == L3_OK; k++) {
        json_t *v = json_object_get(root, names[k]);
        char fp[64];
        snprintf(fp, sizeof fp, "$.%s", names[k]);
        if (!v) {
            if (k < 2)
                st = l3_fail(err, L3_ELAYOUT, "%s: required", fp);
            continue;
        }
        if ((st = l3_json_uint(v, fp, k < 2 ? 1 : 0, k < 2 ? UINT64_MAX >> 1 : UINT32_MAX, &u, err)) != L3_OK)
            break;
        if (k == 0) l->lcm_block_bytes = u;
        if (k == 1) l->num_lcm_blocks = u;
        if (k == 2) l->owner_rank = (uint32_t)u;
        if (k == 3) l->tp_rank = (uint32_t)u;
    }
    json_decref(root);
    if (st == L3_ECONFIG) {
        /* The shared field readers say ECONFIG; this is a layout. */
        if (err)
            err->code = L3_ELAYOUT;
        st = L3_ELAYOUT;
    }
    return st == L3_OK ? l3_layout_validate(l, err) : st;
}
