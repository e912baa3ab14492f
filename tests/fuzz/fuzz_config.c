/* libFuzzer: the JSON config parser. Any input either parses into a config
 * whose effective JSON parses again, or is an L3_ECONFIG with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "l3_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    l3_config c;
    l3_error err;
    l3_status st = l3_config_parse(text, &c, &err);
    if (st == L3_OK) {
        char *json = l3_config_to_json(&c);
        l3_config again;
        if (l3_config_parse(json, &again, &err) != L3_OK)
            abort(); /* the effective config must round-trip */
        l3_config_free(&again);
        free(json);
        l3_config_free(&c);
    } else if (st != L3_ECONFIG && st != L3_ENOMEM) {
        abort();
    } else if (!err.msg[0]) {
        abort(); /* every error says what is wrong */
    }
    free(text);
    return 0;
}
