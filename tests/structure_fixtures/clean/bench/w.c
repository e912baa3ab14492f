/* Another program: its own main (it links apart from tools/). */
#include "a.h"

int w_helper(void) { return a_value(); }

int main(void) { return w_helper() == 0; }
