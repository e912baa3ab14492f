#ifndef X_H
#define X_H
#include "y.h"
#endif
