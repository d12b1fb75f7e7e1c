#ifndef VIGIL_CVIGILLINUX_H
#define VIGIL_CVIGILLINUX_H
// Linux-only headers that Swift's Glibc module does not export, plus tiny inline helpers
// for macros and variadic calls Swift cannot import.
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <poll.h>
#include <time.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Defined in shim.c, which needs _GNU_SOURCE; defining it here would change how glibc's headers
// look to Swift (fd_set) and clash with the Glibc module.
int cvigil_set_thread_name(pthread_t thread, const char *name);
// The user id of a Unix socket's peer (SO_PEERCRED's struct ucred needs _GNU_SOURCE).
int cvigil_peer_uid(int fd, unsigned int *uid);

static inline int cvigil_errno(void) { return errno; }

// A peer that closed its end must be an EPIPE error, never a SIGPIPE that kills the node.
static inline void cvigil_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }
static inline void cvigil_ignore_sigxfsz(void) { signal(SIGXFSZ, SIG_IGN); }

// Installs a SIGSEGV/SIGBUS handler that writes `message` (kept, not copied) to stderr and exits
// with `status`: for commands that read the event log through LMDB's memory map, where a damaged
// page is a wild pointer and an unreadable sector a SIGBUS. Returns 0, or -1 with errno.
int cvigil_exit_on_memory_fault(const char *message, int status);
// CRC-32C with the processor's instruction (shim.c): whether this processor has one, and the
// checksum of `length` bytes continuing from `crc` (call only where the first said 1).
int cvigil_crc32c_hardware(void);
uint32_t cvigil_crc32c(uint32_t crc, const void *bytes, size_t length);
static inline ssize_t cvigil_send(int fd, const void *buffer, size_t length) { return send(fd, buffer, length, MSG_NOSIGNAL); }
static inline void cvigil_set_errno(int value) { errno = value; }

static inline int cvigil_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }

// struct epoll_event is packed on x86_64; build and read it here so Swift never sees the layout.
static inline int cvigil_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev);
}

// Waits and copies ready (token, events) pairs into two plain arrays.
static inline int cvigil_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event evs[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) { tokens[i] = evs[i].data.u64; events[i] = evs[i].events; }
    return n;
}

/// Sets the calling thread's nice value (Linux schedules threads by their own) and marks it
/// reset-on-fork, in one sched_setattr(2): what it starts (a notifier, the log check, a thread it
/// creates) begins at nice 0 instead of inheriting a raised priority. One call, so nothing is half
/// applied; and not sched_setscheduler(2), which systemd's RestrictRealtime= refuses for any
/// policy word with the reset flag in it. 0, or -1 with errno.
#include <string.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
struct cvigil_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};
static inline int cvigil_set_thread_nice(int nice) {
    struct cvigil_sched_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.sched_policy = 0;            /* SCHED_OTHER */
    attr.sched_flags = 0x01;          /* SCHED_FLAG_RESET_ON_FORK */
    attr.sched_nice = nice;
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

static inline uint64_t cvigil_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cvigil_realtime_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000ull;
}

static inline int cvigil_timerfd_arm_ns(int fd, uint64_t ns) {
    struct itimerspec spec = {0};
    if (ns == 0) ns = 1; // zero would disarm; fire as soon as possible instead
    spec.it_value.tv_sec = (time_t)(ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(ns % 1000000000ull);
    return timerfd_settime(fd, 0, &spec, NULL);
}

static inline int cvigil_timerfd_disarm(int fd) {
    struct itimerspec spec = {0};
    return timerfd_settime(fd, 0, &spec, NULL);
}

static inline int cvigil_unix_address(struct sockaddr_un *addr, const char *path) {
    size_t n = 0;
    while (path[n] != 0) n++;
    if (n >= sizeof(addr->sun_path)) return -1;
    addr->sun_family = AF_UNIX;
    for (size_t i = 0; i <= n; i++) addr->sun_path[i] = path[i];
    return 0;
}

int cvigil_accept(int fd);

// pipe2(2) needs _GNU_SOURCE; see shim.c.
int cvigil_pipe2(int fds[2], int flags);

// pidfd_open(2): a descriptor that becomes readable when the process exits (Linux 5.3+).
static inline int cvigil_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

/// posix_spawn with stdin from `stdin_fd` and stdout and stderr both to `out_fd`, no other
/// descriptor, in "/". Every program spawned here starts with no signal blocked and every signal
/// at its default action (the node blocks SIGTERM for its signalfd; the runtime ignores SIGPIPE).
int cvigil_spawn_io(pid_t *pid, const char *path, char *const argv[], int stdin_fd, int out_fd);
// Spawns `path` with `argv` and `envp` (NULL-terminated), stdin from `stdin_fd`, stdout to
// /dev/null and stderr to `stderr_fd`; every other descriptor is closed in the child. Returns 0 or an
// errno. For a program the node does not trust with its privileges (a notifier): `envp` only,
// and without the calling thread's ambient capabilities (cleared on that thread first: it is
// permanent there, and the loop never starts anything that needs them).
int cvigil_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdin_fd, int stderr_fd);

/// posix_spawn of a program beside this one (a tool's or a test's): its stdin, stdout and stderr
/// from `in_fd`, `out_fd` and `err_fd` (-1: /dev/null; 0, 1 or 2 in its own place: this
/// process's, inherited), every other descriptor closed in the child whether close-on-exec or
/// not, in `directory` (NULL: this one), in a process group of its own, with no signal blocked
/// and every signal at its default action; `envp` NULL: `environ`.
/// The given descriptors must be 3 or above, or their own number. Returns 0 or an errno value.
int cvigil_spawn_program(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                         int in_fd, int out_fd, int err_fd, const char *directory);

/* A non-blocking TCP socket connecting to a numeric IPv4 or IPv6 address: returns the socket
 * (connected, or connecting: watch it for output, then read SO_ERROR) or -1 with errno set
 * (EINVAL: not a numeric address). No name lookup, so it never blocks. */
static inline int cvigil_tcp_connect(const char *address, unsigned short port) {
    struct sockaddr_storage storage;
    memset(&storage, 0, sizeof storage);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
    socklen_t length;
    int family;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        family = AF_INET; v4->sin_family = AF_INET; v4->sin_port = htons(port); length = sizeof *v4;
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        family = AF_INET6; v6->sin6_family = AF_INET6; v6->sin6_port = htons(port); length = sizeof *v6;
    } else {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&storage, length) < 0 && errno != EINPROGRESS) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* 1 when `address` is a numeric IPv4 or IPv6 address cvigil_tcp_connect takes, else 0. */
static inline int cvigil_is_numeric_address(const char *address) {
    struct in6_addr buffer;
    return inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1;
}

/* The pending error of a socket (SO_ERROR): 0 when a non-blocking connect succeeded. */
static inline int cvigil_socket_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return errno;
    return error;
}

static inline int cvigil_unix_connect(int fd, const char *path) {
    struct sockaddr_un addr = {0};
    if (cvigil_unix_address(&addr, path) != 0) { errno = ENAMETOOLONG; return -1; }
    return connect(fd, (struct sockaddr *)&addr, sizeof(addr));
}

// The address of `path` (`length` bytes, no NUL needed), which may name the abstract namespace
// with a leading '@' (as NOTIFY_SOCKET does): then sun_path starts with a NUL and the address is
// exactly as long as the name. Returns the address's size, or 0 when the name is too long.
static inline socklen_t cvigil_unix_name(struct sockaddr_un *addr, const char *path, size_t length) {
    if (length == 0 || length >= sizeof(addr->sun_path)) return 0;
    addr->sun_family = AF_UNIX;
    for (size_t i = 0; i < length; i++) addr->sun_path[i] = path[i];
    socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    if (path[0] == '@') addr->sun_path[0] = 0;
    else { addr->sun_path[length] = 0; size += 1; } // a path's address holds its NUL
    return size;
}

static inline ssize_t cvigil_unix_sendto(int fd, const char *path, size_t length, const void *bytes, size_t count) {
    struct sockaddr_un addr = {0};
    socklen_t size = cvigil_unix_name(&addr, path, length);
    if (size == 0) { errno = ENAMETOOLONG; return -1; }
    return sendto(fd, bytes, count, MSG_NOSIGNAL, (struct sockaddr *)&addr, size);
}

static inline int cvigil_unix_bind_name(int fd, const char *path, size_t length) {
    struct sockaddr_un addr = {0};
    socklen_t size = cvigil_unix_name(&addr, path, length);
    if (size == 0) { errno = ENAMETOOLONG; return -1; }
    return bind(fd, (struct sockaddr *)&addr, size);
}

static inline int cvigil_unix_bind(int fd, const char *path) {
    struct sockaddr_un addr = {0};
    if (cvigil_unix_address(&addr, path) != 0) { errno = ENAMETOOLONG; return -1; }
    return bind(fd, (struct sockaddr *)&addr, sizeof(addr));
}
#endif
