#ifndef Y_H
#define Y_H
#include "x.h"
#endif
