import Foundation
import Logging
import VigilSystem

/// The hub's own PostgreSQL cluster, for a hub with no `database.url`: one command gives a
/// working hub. It lives in `DATA/postgres`, listens on a Unix socket in `DATA/postgres-run` only
/// (no TCP), and is made with Debian's `initdb` and run with `pg_ctl`.
///
/// - PostgreSQL refuses to run as root: a hub running as root runs it as Debian's `postgres`
///   user (`runuser`), gives that user the two directories, and lets it traverse `DATA` (mode
///   `o+x`, no read).
/// - Local connections are trusted: only the cluster's user (and root) can reach the socket
///   directory (mode 0700).
/// - A cluster left running by a hub that was killed is reused by the next start, and
///   `stop()` stops only a cluster this process started.
public final class LocalCluster: Sendable {
    public let dataDirectory: String
    public let clusterDirectory: String
    public let socketDirectory: String
    public let port: Int
    public let databaseName = "vigil"
    public let userName = "vigil"
    let binDirectory: String
    let logger: Logger
    let startedHere = LockedFlag()

    public init(dataDirectory: String, port: Int = 5432, logger: Logger) throws(HubError) {
        self.dataDirectory = dataDirectory
        clusterDirectory = dataDirectory + "/postgres"
        // A Unix socket's path has at most 107 bytes: a deep DATA gets a short directory of its
        // own under /tmp, named after DATA (the same DATA, the same socket).
        let inData = dataDirectory + "/postgres-run"
        socketDirectory = (inData + "/.s.PGSQL.\(port)").utf8.count <= 100
            ? inData : "/tmp/vigil-hub-pg-" + Self.shortName(dataDirectory)
        self.port = port
        self.logger = logger
        guard let bin = Self.findBinDirectory() else {
            throw .setup("PostgreSQL's initdb and pg_ctl were not found under /usr/lib/postgresql (scripts/setup installs postgresql-15)")
        }
        binDirectory = bin
    }

    /// 16 hex digits naming a path (FNV-1a of its bytes).
    static func shortName(_ path: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in URL(fileURLWithPath: path).standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The highest installed PostgreSQL's binaries.
    static func findBinDirectory() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        return versions.map { "\(root)/\($0)/bin" }.first { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") }
    }

    var runsAsRoot: Bool { getuid() == 0 }

    /// Makes the cluster if there is none, and starts it unless it is running.
    public func start() throws(HubError) {
        let files = FileManager.default
        do {
            try files.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            try files.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        } catch {
            throw .setup("cannot make \(socketDirectory): \(error)")
        }
        // Under /tmp anyone could have made the directory first, or left a link there to somewhere
        // else: it must be a real directory, owned by us (or postgres), before the server's
        // socket goes in it.
        let owner = runsAsRoot ? FileSystem.userID(named: "postgres") : getuid()
        let entry: FileSystem.Entry
        do { entry = try FileSystem.entry(socketDirectory) } catch { throw .setup("cannot check \(socketDirectory): \(error)") }
        guard entry.isDirectory, !entry.isSymbolicLink, entry.owner == owner || entry.owner == getuid() else {
            throw .setup("\(socketDirectory) is not a directory of this hub's own (a link, or another user's): remove it, or use a shorter DATA path")
        }
        if runsAsRoot {
            // The postgres user must reach its directories through DATA (and DATA's parents).
            try checkTraversable(parentOf: dataDirectory)
            chmodAdding(dataDirectory, 0o011)
            try run(["/bin/chown", "postgres:postgres", socketDirectory], asPostgres: false)
        }
        chmod(socketDirectory, 0o700)
        if !files.fileExists(atPath: clusterDirectory + "/PG_VERSION") {
            do { try files.createDirectory(atPath: clusterDirectory, withIntermediateDirectories: true) } catch {
                throw .setup("cannot make \(clusterDirectory): \(error)")
            }
            if runsAsRoot { try run(["/bin/chown", "postgres:postgres", clusterDirectory], asPostgres: false) }
            chmod(clusterDirectory, 0o700)
            logger.info("hub: making the database cluster", metadata: ["directory": "\(clusterDirectory)"])
            try run([binDirectory + "/initdb", "-D", clusterDirectory, "-U", userName, "--auth-local=trust",
                     "--auth-host=reject", "-E", "UTF8", "--locale=C.UTF-8"], asPostgres: true)
        }
        if (try? run([binDirectory + "/pg_ctl", "-D", clusterDirectory, "status"], asPostgres: true, quiet: true)) != nil {
            logger.info("hub: the database cluster is already running; using it")
        } else {
            try run([binDirectory + "/pg_ctl", "-D", clusterDirectory, "-l", clusterDirectory + "/server.log", "-w", "-t", "60",
                     "-o", "-c listen_addresses='' -k \(socketDirectory) -p \(port)", "start"], asPostgres: true)
            startedHere.set()
        }
        try ensureDatabase()
    }

    /// Stops the cluster if this process started it.
    public func stop() {
        guard startedHere.take() else { return }
        do {
            try run([binDirectory + "/pg_ctl", "-D", clusterDirectory, "-m", "fast", "-w", "stop"], asPostgres: true)
        } catch {
            logger.warning("hub: stopping the database cluster failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops the cluster whoever started it (tests, `vigil-hub` after a kill).
    public func stopAlways() {
        _ = try? run([binDirectory + "/pg_ctl", "-D", clusterDirectory, "-m", "fast", "-w", "stop"], asPostgres: true, quiet: true)
    }

    /// Restarts the server (tests: PostgreSQL restarted under load).
    public func restart() throws(HubError) {
        try run([binDirectory + "/pg_ctl", "-D", clusterDirectory, "-l", clusterDirectory + "/server.log", "-m", "fast", "-w", "-t", "60",
                 "-o", "-c listen_addresses='' -k \(socketDirectory) -p \(port)", "restart"], asPostgres: true)
    }

    /// The Unix socket a client connects to.
    public var socketPath: String { "\(socketDirectory)/.s.PGSQL.\(port)" }

    private func ensureDatabase() throws(HubError) {
        let psql = binDirectory + "/psql"
        let exists = try run([psql, "-h", socketDirectory, "-p", "\(port)", "-U", userName, "-d", "postgres", "-tAc",
                              "SELECT 1 FROM pg_database WHERE datname = '\(databaseName)'"], asPostgres: true)
        if exists.trimmingCharacters(in: .whitespacesAndNewlines) != "1" {
            try run([binDirectory + "/createdb", "-h", socketDirectory, "-p", "\(port)", "-U", userName, databaseName], asPostgres: true)
        }
    }

    @discardableResult
    private func run(_ arguments: [String], asPostgres: Bool, quiet: Bool = false) throws(HubError) -> String {
        let command = asPostgres && runsAsRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments
        let outputPath = dataDirectory + "/.postgres-command.out"
        defer { unlink(outputPath) }
        let status: Int32
        do {
            status = try runToCompletion(path: command[0], arguments: Array(command.dropFirst()), outputPath: outputPath)
        } catch {
            throw .setup("cannot run \(command[0]): \(error)")
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            if !quiet {
                logger.error("hub: command failed", metadata: ["command": "\(arguments.joined(separator: " "))", "output": "\(text)"])
            }
            throw .setup("\((arguments[0] as NSString).lastPathComponent) failed (exit \(status)): \(text.suffix(400))")
        }
        return text
    }

    /// Every directory above DATA must let others through (x), or the postgres user cannot reach
    /// its cluster. Said plainly instead of initdb's "permission denied".
    private func checkTraversable(parentOf path: String) throws(HubError) {
        var url = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent()
        while url.path != "/" && !url.path.isEmpty {
            var info = stat()
            if stat(url.path, &info) == 0, info.st_mode & 0o001 == 0 {
                throw .setup("the postgres user cannot reach \(path): \(url.path) is not traversable by others (chmod o+x \(url.path), or keep the hub's data elsewhere, such as /var/lib/vigil-hub)")
            }
            url.deleteLastPathComponent()
        }
    }

    private func chmod(_ path: String, _ mode: mode_t) {
        _ = Foundation.chmod(path, mode)
    }

    private func chmodAdding(_ path: String, _ bits: mode_t) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        _ = Foundation.chmod(path, (info.st_mode & 0o7777) | bits)
    }
}

/// A flag set once and taken once, across threads.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    func take() -> Bool { lock.withLock { defer { value = false }; return value } }
}
