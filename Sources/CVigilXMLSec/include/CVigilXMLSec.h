#ifndef CVIGIL_XMLSEC_H
#define CVIGIL_XMLSEC_H

#include <stddef.h>

// What cvigil_xmlsec_verify found.
// The one enveloped signature verifies under a certificate that chains to a trusted one.
#define CVIGIL_XMLSEC_VERIFIED 0
// There is a signature and it does not verify, or is not one this box accepts (reason says).
#define CVIGIL_XMLSEC_INVALID 1
// The document carries no signature.
#define CVIGIL_XMLSEC_UNSIGNED 2
// The document could not be read, or xmlsec could not start (reason says).
#define CVIGIL_XMLSEC_ERROR (-1)

// Verifies the XML signature (http://www.w3.org/2000/09/xmldsig#) that is a direct child of the
// document's root, as CAP 1.2 places one. Accepted: one Reference, URI="" (the whole document),
// the enveloped transform and canonicalisation (inclusive or exclusive), SHA-256/384/512 digests,
// RSA or ECDSA with SHA-256/384/512; the key from an X509Data certificate that chains to one of
// `trusted` (PEM texts) at the time of the call. Nothing is fetched: no remote URIs, no
// RetrievalMethod, no XSLT, no raw KeyValue. `reason` (NUL-terminated, cut to `reason_size`)
// says why when the answer is not VERIFIED; `signer` the certificate's subject when it is.
// Thread-safe: each call has its own contexts; xmlsec starts once.
int cvigil_xmlsec_verify(const unsigned char *document, size_t length,
                         const char *const *trusted, const size_t *trusted_lengths, size_t trusted_count,
                         char *reason, size_t reason_size, char *signer, size_t signer_size);

#endif
