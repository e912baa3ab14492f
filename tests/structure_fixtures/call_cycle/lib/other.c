int util_twice(int x); /* util.c's */

int other_half(int x) { return x < 0 ? util_twice(-x) : x / 2; }
