// Hex lives in the pure VigilHex target, below both this module and the pure layers
// (VigilCore, VigilExposure), which must not depend on VigilSystem. Re-exported so that code
// which reads and writes hex beside its syscalls keeps one import.
@_exported import VigilHex
