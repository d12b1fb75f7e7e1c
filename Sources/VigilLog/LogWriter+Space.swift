import CLMDB
import VigilSystem

/// The writer's room on the card: a full disk told from a failing one, the reserve file that
/// keeps the last bytes for critical records, and the map's growth up to its cap
/// (docs/log.md "Failing safe").
extension LogWriter {
    /// Whether a failed commit or purge met a full disk rather than a failing card. ENOSPC, or EIO
    /// from a write LMDB found cut short with the file system (nearly) full; and in both cases the
    /// data file's write-back must be sound: an error there means pages an earlier commit (or its
    /// meta page) counted on may be gone, and the log must fail (docs/log.md "Failing safe").
    func isFullDisk(_ error: LMDBError) -> Bool {
        guard error.isDiskFull || error.isIOError else { return false }
        let writebackSound: Bool = switch writebackProbe {
        case .some(let probe): (try? probe.fsync()) != nil
        case .none: false
        }
        guard writebackSound else { return false }
        if error.isDiskFull { return true }
        let available = FileSystem.availableBytes(config.directory) ?? .max
        return available < Self.nearlyFullBytes
    }

    /// Below this much free space, a short write (EIO with sound write-back) is a full disk.
    static let nearlyFullBytes = 4 << 20

    /// Where the reserve is kept: beside data.mdb, on the same file system.
    private var diskReservePath: String { config.directory + "/disk-reserve" }

    /// Makes sure `disk-reserve` holds `diskReserveBytes`. Called at start and, while the disk is
    /// full, at most every `diskReserveRetryMicroseconds`, once the file system has room for
    /// twice the reserve: success ends the full-disk state. A partial allocation is
    /// handed back at once, so a full disk keeps its last bytes for critical records.
    func holdDiskReserve() {
        lastReserveAttempt = monotonicNanoseconds()
        let bytes = config.diskReserveBytes
        guard bytes > 0 else {
            // No reserve: the disk counts as full until some room is back.
            if diskFull, (FileSystem.availableBytes(config.directory) ?? 0) >= Self.nearlyFullBytes { diskFull = false }
            stats.withLock { $0.diskFull = diskFull }
            return
        }
        let path = diskReservePath
        var held = (FileSystem.size(path) ?? 0) >= bytes
        // After a full disk, take the reserve back only once there is room for it and as much
        // again: taking the very bytes just handed back would end the state only to start it anew.
        if !held && diskFull && (FileSystem.availableBytes(config.directory) ?? 0) < 2 * bytes {
            stats.withLock { $0.diskReserveBytes = 0 }
            return
        }
        if !held {
            do {
                try FileSystem.allocate(path, bytes: bytes)
                held = true
            } catch {
                FileSystem.remove(path)
                if error.errno == .noSpace { diskFull = true }
            }
        }
        if held { diskFull = false }
        stats.withLock { s in
            s.diskReserveBytes = held ? bytes : 0
            s.diskFull = diskFull
        }
    }

    /// Hands the reserve back to the file system and enters the full-disk state. Returns whether
    /// there was a reserve to hand back (so a retry can succeed).
    func releaseDiskReserve() -> Bool {
        let hadReserve = FileSystem.exists(diskReservePath)
        FileSystem.remove(diskReservePath)
        if !diskFull { lastReserveAttempt = monotonicNanoseconds() }
        diskFull = true
        stats.withLock { s in
            s.diskReserveBytes = 0
            s.diskFull = true
            s.diskFullEpisodes += hadReserve ? 1 : 0
        }
        return hadReserve
    }

    func nearCap() -> Bool {
        guard let info = try? environment.environment.info(), info.me_mapsize >= config.maxMapSize,
              let page = try? environment.environment.pageSize() else { return false }
        let used = (Int(info.me_last_pgno) + 1) * page
        return Double(used) > Double(config.maxMapSize) * (1 - config.criticalReserve)
    }

    /// Grows the map by the growth factor, up to the cap. Returns false when already at the cap.
    func growMap() -> Bool {
        guard let info = try? environment.environment.info() else { return false }
        let current = info.me_mapsize
        guard current < config.maxMapSize else { return false }
        let target = min(config.maxMapSize, max(current + (1 << 20), Int(Double(current) * config.growthFactor)))
        let grown: Bool = environment.mapLock.withWriteLock {
            (try? environment.environment.setMapSize(target)) != nil
        }
        if grown {
            stats.withLock { s in
                s.mapGrowths += 1
                s.mapSize = target
            }
        }
        return grown
    }
}
