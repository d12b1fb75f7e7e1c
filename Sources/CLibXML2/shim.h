// libxml2 for VigilCAP: CAP 1.2 documents parsed into a tree from memory (xmlCtxtReadMemory),
// with network access, DTD loading and entity substitution off (docs/warnings.md, "Bounds").
//
// Debian's libxml2 is built with ICU, and libxml/encoding.h then includes the system's ICU
// headers, which clash in one Swift module graph with the ICU Foundation bundles. Nothing here
// uses libxml2's ICU converters (VigilCAP reads UTF-8 only), and they appear only behind
// pointers (xmlCharEncodingHandler's fields), whose layout VigilCAP never reads: so the ICU part
// of the headers is left out.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
