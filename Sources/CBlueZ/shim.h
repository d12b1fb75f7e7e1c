#ifndef VIGIL_CBLUEZ_SHIM_H
#define VIGIL_CBLUEZ_SHIM_H
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#endif
