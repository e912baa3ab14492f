#include "t.h"

int main(void) { return t_run() == 0; }
