#include "t.h"

int main_helper(void) { return 1; }

int main(void) { return t_run() == 0; }
