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

// Starts libxmlsec1 and libxml2's parser once for the process (later calls return at once);
// 1 when it is ready. Call it before parsing starts on other threads: starting changes
// process-wide state (the external entity loader).
int cvigil_xmlsec_start(void);

// Whether `pem` (a PEM certificate, `length` bytes, not NUL-terminated) can anchor verification:
// libxmlsec1 1.2 builds whole chains, so only a self-signed CA certificate can. 0 when it can;
// otherwise 1 and `reason`.
int cvigil_xmlsec_check_anchor(const unsigned char *pem, size_t length, char *reason, size_t reason_size);

// Verifies the XML signature (http://www.w3.org/2000/09/xmldsig#) that is a direct child of the
// document's root, as CAP 1.2 places one. Accepted: one Reference, URI="" (the whole document),
// the enveloped transform and canonicalisation (inclusive or exclusive), SHA-256/384/512 digests,
// RSA or ECDSA with SHA-256/384/512; the key from an X509Data certificate that chains to one of
// `trusted` (PEM texts) at the time of the call. Nothing is fetched: no remote URIs, no
// RetrievalMethod, no XSLT, no raw KeyValue, no DTD. The trusted certificates are
// `trusted_count` PEM texts laid end to end in `trusted`, the nth `trusted_lengths[n]` bytes
// long. `reason` (NUL-terminated, cut to `reason_size`)
// says why when the answer is not VERIFIED; `signer` the certificate's subject when it is.
// Thread-safe: each call has its own contexts; xmlsec starts once.
int cvigil_xmlsec_verify(const unsigned char *document, size_t length,
                         const unsigned char *trusted, const size_t *trusted_lengths, size_t trusted_count,
                         char *reason, size_t reason_size, char *signer, size_t signer_size);

#endif
