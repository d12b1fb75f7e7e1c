#ifndef VIGIL_CGPIOD_SHIM_H
#define VIGIL_CGPIOD_SHIM_H
#include <gpiod.h>
#endif
