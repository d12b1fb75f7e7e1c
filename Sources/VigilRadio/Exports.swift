// The network's statements (certificates, revocations, keys) are part of every signed frame's
// API: whoever uses the frames gets them with VigilRadio. The hub imports VigilTrust alone,
// without the radio.
@_exported import VigilTrust
