#include "l3_status.h"

int l3_answer(void) { return 42; }

int l3_question(void) { return 6 * 9; }
