#ifndef VIGIL_CLMDB_SHIM_H
#define VIGIL_CLMDB_SHIM_H
#include <lmdb.h>
#endif
