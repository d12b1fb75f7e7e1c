// Intentionally empty: CVigilLinux is header-only; SwiftPM needs one source file.
