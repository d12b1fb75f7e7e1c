// libcrypto (OpenSSL 3) for VigilExposure's batch RPI engine: EVP ciphers, EVP_MAC, errors.
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/err.h>
