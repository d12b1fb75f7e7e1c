import CLMDB
import VigilSystem

/// An environment with its database handles.
final class OpenEnvironment: Sendable {
    let environment: LMDBEnvironment
    let events: MDB_dbi
    let checkpoints: MDB_dbi
    let meta: MDB_dbi
    let readOnly: Bool
    /// Held shared by read transactions, exclusively while the map grows.
    let mapLock = ReadWriteLock()
    /// At most one writer per environment per process.
    let hasWriter = LockedValue(false)
    /// How records are stored. Only ever changes from `.unchecked` (a format-1 log) to a
    /// checksummed format, when another process's node upgrades the log.
    let recordFormat: LockedValue<RecordFormat>
    /// data.mdb's identity when opened: a salvage moves the file aside and puts a fresh one in its
    /// place, which must not be served by this environment.
    let fileIdentity = LockedValue<[UInt64]?>(nil)

    init(environment: LMDBEnvironment, events: MDB_dbi, checkpoints: MDB_dbi, meta: MDB_dbi, readOnly: Bool,
         recordFormat: RecordFormat) {
        self.recordFormat = LockedValue(recordFormat)
        self.environment = environment
        self.events = events
        self.checkpoints = checkpoints
        self.meta = meta
        self.readOnly = readOnly
    }
}

/// LMDB must not open the same environment twice in one process: its locks are per-process
/// (fcntl), so a second open believes it is alone and resets the lock file under the first.
/// Every EventLog in a process therefore shares one environment per directory.
///
/// Misuse: opening a directory for writing while it is open read-only in the same process is
/// refused (`LogError.incompatible`); open for writing first.
final class EnvironmentRegistry: Sendable {
    static let shared = EnvironmentRegistry()

    private struct Weak { weak var value: OpenEnvironment? }
    private let open = LockedValue<[String: Weak]>([:])

    func open(_ configuration: LogConfiguration, flags: EnvironmentFlags, readOnly: Bool) throws -> OpenEnvironment {
        let key = FileSystem.canonicalPath(configuration.directory)
        return try open.withLock { table -> OpenEnvironment in
            let data = try? FileSystem.entry(configuration.directory + "/data.mdb")
            if let existing = table[key]?.value, let data, let identity = existing.fileIdentity.withLock({ $0 }),
               identity != [data.device, data.inode] {
                // The file was replaced (a salvage): the old environment serves the file moved aside.
                table[key] = nil
            }
            if let existing = table[key]?.value {
                if !readOnly && existing.readOnly {
                    throw LogError.incompatible("\(configuration.directory) is open read-only in this process; open it for writing first")
                }
                return existing
            }
            let opened = try EventLog.openDatabases(configuration, flags: flags, readOnly: readOnly)
            if let now = try? FileSystem.entry(configuration.directory + "/data.mdb") {
                opened.fileIdentity.withLock { $0 = [now.device, now.inode] }
            }
            table[key] = Weak(value: opened)
            return opened
        }
    }
}
