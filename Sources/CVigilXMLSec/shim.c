// The one use of libxmlsec1: verifying a CAP 1.2 document's enveloped XML signature
// (docs/warnings.md, "Signatures"). Wrapped in C because xmlsec's API is macros over the crypto
// backend (OpenSSL here) and structures whose fields must be set before verifying.

#include "CVigilXMLSec.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <xmlsec/xmlsec.h>
#include <xmlsec/xmltree.h>
#include <xmlsec/xmldsig.h>
#include <xmlsec/crypto.h>
#include <xmlsec/errors.h>
#include <xmlsec/openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Package.swift gives the defines of Debian 12's pkg-config for libxmlsec1 1.2 (SwiftPM does not
// pass a system library's defines on): another series would lay its structures out otherwise.
#if XMLSEC_VERSION_MAJOR != 1 || XMLSEC_VERSION_MINOR != 2
#error "CVigilXMLSec is written for libxmlsec1 1.2 (Debian 12); check Package.swift's defines against pkg-config --cflags xmlsec1-openssl"
#endif
#ifndef XMLSEC_NO_SIZE_T
#error "libxmlsec1 1.2 on Debian is built with XMLSEC_NO_SIZE_T (xmlSecSize is unsigned int)"
#endif

static pthread_once_t started_once = PTHREAD_ONCE_INIT;
static int started = 0;

// xmlsec reports errors through one process-wide callback: each call keeps the first of its
// own thread (the innermost cause, such as the certificate check's), never printed.
static __thread char first_error[256];

static void record_error(const char *file, int line, const char *func, const char *object, const char *subject,
                         int reason, const char *msg) {
    (void)file; (void)line; (void)func; (void)object; (void)reason;
    if (first_error[0] != 0) return;
    snprintf(first_error, sizeof first_error, "%s%s%s", subject ? subject : "", subject ? ": " : "", msg ? msg : "failed");
}

static void start(void) {
    xmlInitParser();
    if (xmlSecInit() < 0) return;
    if (xmlSecCheckVersion() != 1) return;
    if (xmlSecCryptoAppInit(NULL) < 0) return;
    if (xmlSecCryptoInit() < 0) return;
    xmlSecErrorsSetCallback(record_error);
    started = 1;
}

static int say(char *buffer, size_t size, int result, const char *text) {
    if (buffer != NULL && size > 0) {
        if (first_error[0] != 0 && result != CVIGIL_XMLSEC_UNSIGNED) {
            snprintf(buffer, size, "%s (%s)", text, first_error);
        } else {
            snprintf(buffer, size, "%s", text);
        }
    }
    return result;
}

static int enable(xmlSecDSigCtxPtr ctx) {
    // What a signed CAP document needs, and nothing that reads files, fetches or runs code.
    xmlSecTransformId both[] = {
        xmlSecTransformInclC14NId, xmlSecTransformInclC14NWithCommentsId,
        xmlSecTransformExclC14NId, xmlSecTransformExclC14NWithCommentsId,
    };
    xmlSecTransformId signature[] = {
        xmlSecTransformRsaSha256Id, xmlSecTransformRsaSha384Id, xmlSecTransformRsaSha512Id,
        xmlSecTransformEcdsaSha256Id, xmlSecTransformEcdsaSha384Id, xmlSecTransformEcdsaSha512Id,
    };
    xmlSecTransformId reference[] = {
        xmlSecTransformEnvelopedId, xmlSecTransformSha256Id, xmlSecTransformSha384Id, xmlSecTransformSha512Id,
    };
    for (size_t i = 0; i < sizeof both / sizeof both[0]; i++) {
        if (xmlSecDSigCtxEnableSignatureTransform(ctx, both[i]) < 0) return -1;
        if (xmlSecDSigCtxEnableReferenceTransform(ctx, both[i]) < 0) return -1;
    }
    for (size_t i = 0; i < sizeof signature / sizeof signature[0]; i++) {
        if (xmlSecDSigCtxEnableSignatureTransform(ctx, signature[i]) < 0) return -1;
    }
    for (size_t i = 0; i < sizeof reference / sizeof reference[0]; i++) {
        if (xmlSecDSigCtxEnableReferenceTransform(ctx, reference[i]) < 0) return -1;
    }
    // Only the whole document (URI=""), never another file or address.
    ctx->enabledReferenceUris = xmlSecTransformUriTypeEmpty;
    ctx->transformCtx.enabledUris = xmlSecTransformUriTypeEmpty;
    ctx->flags |= XMLSEC_DSIG_FLAGS_IGNORE_MANIFESTS;
    // The key only from an X509Data certificate, checked against the trusted ones: a raw
    // KeyValue would let anyone sign, and RetrievalMethod fetches.
    if (xmlSecPtrListAdd(&(ctx->keyInfoReadCtx.enabledKeyData), (xmlSecPtr)xmlSecKeyDataX509Id) < 0) return -1;
    ctx->keyInfoReadCtx.retrievalMethodCtx.enabledUris = xmlSecTransformUriTypeNone;
    ctx->keyInfoReadCtx.maxRetrievalMethodLevel = 0;
    ctx->keyInfoReadCtx.flags |= XMLSEC_KEYINFO_FLAGS_X509DATA_STOP_ON_INVALID_CERT;
    return 0;
}

int cvigil_xmlsec_start(void) {
    pthread_once(&started_once, start);
    return started;
}

int cvigil_xmlsec_check_anchor(const unsigned char *pem, size_t length, char *reason, size_t reason_size) {
    first_error[0] = 0;
    if (length > 0x7fffffff) return say(reason, reason_size, 1, "the certificate is too large");
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    X509 *certificate = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    if (bio != NULL) BIO_free(bio);
    if (certificate == NULL) return say(reason, reason_size, 1, "not a PEM certificate");
    int result = 0;
    const char *text = "a self-signed CA certificate";
    if (X509_check_issued(certificate, certificate) != X509_V_OK) {
        result = 1;
        text = "not self-signed: signers must hold the CA at the root of the chain (libxmlsec1 1.2 verifies whole chains only)";
    } else if (X509_check_ca(certificate) < 1) {
        result = 1;
        text = "not a CA certificate: signers must hold the CA at the root of the chain";
    }
    X509_free(certificate);
    return say(reason, reason_size, result, text);
}

int cvigil_xmlsec_verify(const unsigned char *document, size_t length,
                         const unsigned char *trusted, const size_t *trusted_lengths, size_t trusted_count,
                         char *reason, size_t reason_size, char *signer, size_t signer_size) {
    first_error[0] = 0;
    if (signer != NULL && signer_size > 0) signer[0] = 0;
    pthread_once(&started_once, start);
    if (!started) return say(reason, reason_size, CVIGIL_XMLSEC_ERROR, "libxmlsec1 could not start");
    if (length > 0x7fffffff) return say(reason, reason_size, CVIGIL_XMLSEC_ERROR, "the document is too large");

    // Read as CAPReader reads it: no network, no DTD, no entities, no messages printed.
    xmlParserCtxtPtr parser = xmlNewParserCtxt();
    if (parser == NULL) return say(reason, reason_size, CVIGIL_XMLSEC_ERROR, "out of memory");
    xmlDocPtr doc = xmlCtxtReadMemory(parser, (const char *)document, (int)length, "cap.xml", "UTF-8",
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlFreeParserCtxt(parser);
    if (doc == NULL) return say(reason, reason_size, CVIGIL_XMLSEC_INVALID, "not well-formed XML");
    // CAPReader refuses a DTD before this runs; refused here too, so no caller depends on that.
    if (doc->intSubset != NULL || doc->extSubset != NULL) {
        xmlFreeDoc(doc);
        return say(reason, reason_size, CVIGIL_XMLSEC_INVALID, "a DTD");
    }

    int result = CVIGIL_XMLSEC_ERROR;
    const char *text = "libxmlsec1 failed";
    xmlSecKeysMngrPtr keys = NULL;
    xmlSecDSigCtxPtr ctx = NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlNodePtr found = NULL;
    int signatures = 0;
    for (xmlNodePtr child = root ? root->children : NULL; child != NULL; child = child->next) {
        if (child->type == XML_ELEMENT_NODE && xmlSecCheckNodeName(child, xmlSecNodeSignature, xmlSecDSigNs)) {
            found = child;
            signatures++;
        }
    }
    if (signatures == 0) { result = CVIGIL_XMLSEC_UNSIGNED; text = "no signature"; goto done; }
    if (signatures > 1) { result = CVIGIL_XMLSEC_INVALID; text = "more than one signature"; goto done; }
    if (trusted_count == 0) { result = CVIGIL_XMLSEC_INVALID; text = "no trusted certificate to verify it with"; goto done; }

    keys = xmlSecKeysMngrCreate();
    if (keys == NULL || xmlSecCryptoAppDefaultKeysMngrInit(keys) < 0) { text = "cannot make a keys manager"; goto done; }
    size_t offset = 0;
    for (size_t i = 0; i < trusted_count; i++) {
        if (trusted_lengths[i] > 0x7fffffff ||
            xmlSecCryptoAppKeysMngrCertLoadMemory(keys, (const xmlSecByte *)(trusted + offset), (xmlSecSize)trusted_lengths[i],
                                                  xmlSecKeyDataFormatPem, xmlSecKeyDataTypeTrusted) < 0) {
            text = "a trusted certificate is not a PEM certificate";
            goto done;
        }
        offset += trusted_lengths[i];
    }
    ctx = xmlSecDSigCtxCreate(keys);
    if (ctx == NULL || enable(ctx) < 0) { text = "cannot make a signature context"; goto done; }
    if (xmlSecDSigCtxVerify(ctx, found) < 0) {
        result = CVIGIL_XMLSEC_INVALID;
        text = "the signature cannot be verified";
        goto done;
    }
    if (ctx->status != xmlSecDSigStatusSucceeded) {
        result = CVIGIL_XMLSEC_INVALID;
        text = "the signature does not match the document";
        goto done;
    }
    if (xmlSecPtrListGetSize(&(ctx->signedInfoReferences)) != 1) {
        result = CVIGIL_XMLSEC_INVALID;
        text = "the signature has more than one reference";
        goto done;
    }
    if (signer != NULL && signer_size > 0 && ctx->signKey != NULL) {
        xmlSecKeyDataPtr data = xmlSecKeyGetData(ctx->signKey, xmlSecKeyDataX509Id);
        X509 *certificate = data ? xmlSecOpenSSLKeyDataX509GetKeyCert(data) : NULL;
        if (certificate != NULL) X509_NAME_oneline(X509_get_subject_name(certificate), signer, (int)signer_size);
    }
    result = CVIGIL_XMLSEC_VERIFIED;
    text = "verified";

done:
    if (ctx != NULL) xmlSecDSigCtxDestroy(ctx);
    if (keys != NULL) xmlSecKeysMngrDestroy(keys);
    xmlFreeDoc(doc);
    return say(reason, reason_size, result, text);
}
