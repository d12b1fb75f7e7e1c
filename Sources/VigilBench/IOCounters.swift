import Foundation

/// Kernel counters that show what a run really cost the storage, independent of Vigil's own
/// statistics: this process's `write_bytes` (/proc/self/io: bytes it dirtied for writeback) and
/// the block device's completed flush requests and sectors written (/proc/diskstats; these are
/// system-wide, so other processes writing at the same time inflate them).
struct IOSnapshot {
    var processWriteBytes: UInt64?
    var deviceFlushes: UInt64?
    var deviceSectorsWritten: UInt64?

    static func take(device: BlockDevice?) -> IOSnapshot {
        var snapshot = IOSnapshot()
        if let io = readProcFile("/proc/self/io") {
            for line in io.split(separator: "\n") where line.hasPrefix("write_bytes:") {
                snapshot.processWriteBytes = UInt64(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
            }
        }
        if let device, let stats = readProcFile("/proc/diskstats") {
            for line in stats.split(separator: "\n") {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // major minor name, then the kernel's numbered fields: 7 = sectors written,
                // 15 = flush requests completed (Documentation/admin-guide/iostats.rst).
                guard f.count >= 19, UInt32(f[0]) == device.major, UInt32(f[1]) == device.minor else { continue }
                snapshot.deviceSectorsWritten = UInt64(f[9])
                snapshot.deviceFlushes = UInt64(f[18])
            }
        }
        return snapshot
    }

    /// Counter increases since `earlier`; nil where a counter is unavailable.
    func since(_ earlier: IOSnapshot) -> IODelta {
        func delta(_ a: UInt64?, _ b: UInt64?) -> UInt64? {
            guard let a, let b, a >= b else { return nil }
            return a - b
        }
        return IODelta(processWriteBytes: delta(processWriteBytes, earlier.processWriteBytes),
                       deviceFlushes: delta(deviceFlushes, earlier.deviceFlushes),
                       deviceBytesWritten: delta(deviceSectorsWritten, earlier.deviceSectorsWritten).map { $0 * 512 })
    }
}

struct IODelta {
    var processWriteBytes: UInt64?
    var deviceFlushes: UInt64?
    var deviceBytesWritten: UInt64?
}

/// The block device (major, minor) holding a path, for /proc/diskstats.
struct BlockDevice {
    let major: UInt32
    let minor: UInt32

    init?(holding path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let dev = UInt64(st.st_dev)
        // glibc's encoding of dev_t (gnu_dev_major / gnu_dev_minor are macros Swift cannot import).
        major = UInt32(truncatingIfNeeded: ((dev >> 8) & 0xFFF) | ((dev >> 32) & ~0xFFF))
        minor = UInt32(truncatingIfNeeded: (dev & 0xFF) | ((dev >> 12) & ~0xFF))
    }
}

/// Reads a /proc file (size 0 in stat, so read until EOF); nil when unreadable.
private func readProcFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 8192)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { return nil }
        if n == 0 { break }
        bytes += chunk[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Nanoseconds the calling thread has run on a CPU.
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Scheduler statistics of this process's live threads named `name` (/proc/self/task/*/schedstat):
/// nanoseconds on a CPU, and nanoseconds runnable but waiting for one. Nil when none is found.
func schedulerNanoseconds(ofThreadsNamed name: String) -> (running: UInt64, waiting: UInt64)? {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
    var total: (running: UInt64, waiting: UInt64)?
    for task in tasks {
        guard let comm = readProcFile("/proc/self/task/\(task)/comm"),
              comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
              let schedstat = readProcFile("/proc/self/task/\(task)/schedstat") else { continue }
        let fields = schedstat.split(separator: " ").compactMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard fields.count >= 2 else { continue }
        total = ((total?.running ?? 0) + fields[0], (total?.waiting ?? 0) + fields[1])
    }
    return total
}
