// The few helpers that need GNU extensions (pthread_setname_np, accept4) live here, compiled
// with _GNU_SOURCE, so the public header stays plain POSIX for Swift's importer.
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/socket.h>
#include "CVigilLinux.h"

int cvigil_set_thread_name(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }

int cvigil_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }
