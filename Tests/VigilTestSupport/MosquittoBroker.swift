import Foundation

/// A real Eclipse Mosquitto broker (Debian's `mosquitto`) on loopback, with mutual TLS: a CA of
/// its own, the broker's certificate for `localhost`/127.0.0.1, and a client certificate for
/// the box (`box.crt`/`box.key`) and one for the feed's publisher. Anonymous clients are refused;
/// a certificate's CN is the client's user name. It runs as the test's user (`user` in its
/// configuration: started as root it would otherwise drop to `mosquitto`, who cannot read a
/// test's private directory). For the hazard feed's tests and benchmark.
public final class MosquittoBroker: @unchecked Sendable {
    public let directory: String
    public let port: Int32
    private var process: TestProcess?
    private let log: String

    /// Makes the certificates (once per directory) and the configuration; `start()` runs it.
    public init(directory: String, port: Int32) throws {
        self.directory = directory
        self.port = port
        log = directory + "/mosquitto-\(port).log"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: directory + "/ca.pem") { try makeCertificates() }
        let config = """
            per_listener_settings false
            user \(NSUserName())
            allow_anonymous false
            persistence false
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            max_queued_messages 100000
            listener \(port) 127.0.0.1
            cafile \(directory)/ca.pem
            certfile \(directory)/server.crt
            keyfile \(directory)/server.key
            require_certificate true
            use_identity_as_username true

            """
        try config.write(toFile: directory + "/mosquitto-\(port).conf", atomically: true, encoding: .utf8)
    }

    private func openssl(_ arguments: [String]) throws {
        let r = runProcess("/usr/bin/openssl", arguments)
        guard r.status == 0 else { throw BrokerError("openssl \(arguments.first ?? ""): \(r.output)") }
    }

    private func makeCertificates() throws {
        let d = directory
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem", "-days", "3", "-subj", "/CN=Vigil test CA"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: "\(d)/san.ext", atomically: true, encoding: .utf8)
        for (name, cn, ext) in [("server", "localhost", true), ("box", "vigil-box", false), ("publisher", "feed-publisher", false)] {
            try openssl(["req"] + ec + ["-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).csr", "-subj", "/CN=\(cn)"])
            try openssl(["x509", "-req", "-in", "\(d)/\(name).csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key", "-CAcreateserial",
                         "-out", "\(d)/\(name).crt", "-days", "3"] + (ext ? ["-extfile", "\(d)/san.ext"] : []))
        }
    }

    /// Starts the broker and waits (real time, bounded) until it takes connections.
    public func start() throws {
        guard process == nil else { return }
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        p.arguments = ["-c", directory + "/mosquitto-\(port).conf"]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        p.standardOutput = FileHandle(forWritingAtPath: log)
        p.standardError = FileHandle(forWritingAtPath: log)
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if accepts() { return }
            guard p.isRunning else { break }
            usleep(20_000) // a child process starting: nothing to wait on but its port
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        stop()
        throw BrokerError("mosquitto did not start on port \(port): \(output)")
    }

    /// Kills the broker (SIGKILL: as a crash or a pulled plug would) and waits for it to exit.
    public func stop() {
        guard let p = process else { return }
        process = nil
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    private func accepts() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// `mosquitto_pub` (an independent client) with the publisher's certificate: one message,
    /// its payload from `bytes`.
    public func publish(topic: String, bytes: [UInt8]) throws {
        let file = directory + "/payload-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let r = runProcess("/usr/bin/mosquitto_pub", clientArguments(as: "publisher") + ["-t", topic, "-f", file])
        guard r.status == 0 else { throw BrokerError("mosquitto_pub: \(r.output)") }
    }

    /// `mosquitto_sub` for the first `count` messages on `topic` within `seconds`: each as its
    /// topic and payload in hex. The time limit is kept from here (SIGKILL): `-W` relies on
    /// SIGALRM, which a child of the test process inherits blocked.
    public func receive(topic: String, count: Int = 1, seconds: Int = 10) -> [(topic: String, hex: String)] {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        p.arguments = clientArguments(as: "publisher") + ["-t", topic, "-C", "\(count)", "-F", "%t %x"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return [] }
        let pid = p.processIdentifier
        let limit = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds), execute: limit)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        limit.cancel() // the pid may be another process's once this one is reaped
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }
    }

    public func clientArguments(as name: String) -> [String] {
        ["-h", "127.0.0.1", "-p", "\(port)", "--cafile", directory + "/ca.pem", "--cert", directory + "/\(name).crt",
         "--key", directory + "/\(name).key"]
    }

    public var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    deinit { stop() }
}

public struct BrokerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A TCP port on loopback nobody listens on now (the kernel's pick, released for the caller).
public func freeLoopbackPort() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { return 0 }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int32(UInt16(bigEndian: address.sin_port))
}
