// The few helpers that need GNU extensions (pthread_setname_np, accept4) live here, compiled
// with _GNU_SOURCE, so the public header stays plain POSIX for Swift's importer.
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>
#include <signal.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include "CVigilLinux.h"

extern char **environ;

int cvigil_set_thread_name(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }

int cvigil_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }

int cvigil_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int cvigil_peer_uid(int fd, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = (unsigned int)credentials.uid;
    return 0;
}

/* A program starts with no signal blocked and every signal at its default action. The node and
   the tests block SIGTERM and SIGINT (to read them from a signalfd) and the Swift runtime ignores
   SIGPIPE; a child would inherit both, and a notifier or a broker would then ignore the SIGTERM
   that stops it, or a shell pipeline inside it would not end when its reader did. */
static void start_signals_afresh(posix_spawnattr_t *attr, short flags) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(attr, &none);
    posix_spawnattr_setsigdefault(attr, &all);
    posix_spawnattr_setflags(attr, flags | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

int cvigil_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdin_fd, int stderr_fd) {
    // systemd's AmbientCapabilities (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_NICE) would pass to every program
    // exec'd from here. Capabilities are per thread, and the child is cloned from this one.
    // EINVAL: a kernel without ambient capabilities (before 4.3) has none to pass.
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return errno;
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    // Nothing else of ours, close-on-exec or not: a library's socket (libmosquitto opens its
    // broker connection without SOCK_CLOEXEC) held open by a notifier would outlive the node's
    // own close, and the broker would never see the box leave.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // A fresh process group, so a timeout can kill the program and anything it started.
    start_signals_afresh(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawn(pid, path, &actions, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int cvigil_spawn_io(pid_t *pid, const char *path, char *const argv[], int stdin_fd, int out_fd) {
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
    // Nothing else of ours: a daemon it starts (PostgreSQL) must not hold our sockets or pipes.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    // From "/": a program run as another user may not be allowed into the caller's directory.
    posix_spawn_file_actions_addchdir_np(&actions, "/");
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    start_signals_afresh(&attr, 0);
    rc = posix_spawn(pid, path, &actions, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int cvigil_spawn_program(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                         int in_fd, int out_fd, int err_fd, const char *directory) {
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    const int given[3] = {in_fd, out_fd, err_fd};
    for (int target = 0; target < 3; target++) {
        if (given[target] < 0) {
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
        } else if (given[target] != target) {
            posix_spawn_file_actions_adddup2(&actions, given[target], target);
        } // the same number: this process's own, inherited as it is
    }
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (directory != NULL) posix_spawn_file_actions_addchdir_np(&actions, directory);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    start_signals_afresh(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawn(pid, path, &actions, &attr, argv, envp != NULL ? envp : environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

static const char *fault_message = "";
static int fault_status = 1;

static void exit_on_fault(int signal) {
    (void)signal;
    // Only async-signal-safe calls: write(2) and _exit(2).
    size_t length = 0;
    while (fault_message[length] != 0) length++;
    ssize_t ignored = write(STDERR_FILENO, fault_message, length);
    (void)ignored;
    _exit(fault_status);
}

int cvigil_exit_on_memory_fault(const char *message, int status) {
    fault_message = message;
    fault_status = status;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = exit_on_fault;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, NULL) != 0) return -1;
    if (sigaction(SIGBUS, &action, NULL) != 0) return -1;
    return 0;
}

// CRC-32C (Castagnoli) with the processor's instruction: SSE 4.2's crc32 on x86-64, ARMv8's
// crc32c on aarch64 (a Raspberry Pi 4's Cortex-A72 has it). Each function is compiled for its
// instruction set only; cvigil_crc32c_hardware says at run time whether this processor has it,
// and VigilLog's table is the fallback. Same convention as the table: `crc` is the value so far
// (0 to start), the result is final (inverted in and out).
#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_instruction(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = ~crc & 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
        n--;
    }
    return ~c32;
}

int cvigil_crc32c_hardware(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <arm_acle.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
__attribute__((target("crc")))
static uint32_t crc32c_instruction(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t c = ~crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __crc32cd(c, word);
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        c = __crc32cb(c, *p++);
        n--;
    }
    return ~c;
}

int cvigil_crc32c_hardware(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0; }
#else
static uint32_t crc32c_instruction(uint32_t crc, const unsigned char *p, size_t n) { (void)p; (void)n; return crc; }
int cvigil_crc32c_hardware(void) { return 0; }
#endif

uint32_t cvigil_crc32c(uint32_t crc, const void *bytes, size_t length) {
    return crc32c_instruction(crc, (const unsigned char *)bytes, length);
}
