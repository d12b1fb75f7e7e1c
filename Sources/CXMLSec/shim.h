// libxmlsec1 with its OpenSSL backend (pkg-config "xmlsec1-openssl"): XML signatures of CAP 1.2
// documents from feeds that sign (docs/warnings.md, "Signatures"). Swift never calls it: its
// API is macros over a chosen crypto backend, so CVigilXMLSec wraps the one use in C and this
// module carries the library's compile and link flags to it.
#include <xmlsec/xmlsec.h>
