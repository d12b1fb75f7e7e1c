import CMosquitto
import COpenSSL
import VigilSystem

/// A libmosquitto call that failed: the call, libmosquitto's code and its words for it (and
/// errno's, when the code says a system call failed).
public struct MQTTError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var message: String

    /// `errno`: what the failed call left, read by `ErrnoCall` at once; shown when the code says
    /// a system call failed (MOSQ_ERR_ERRNO).
    init(_ operation: String, code: Int32, errno: Errno?) {
        self.operation = operation
        self.code = code
        var text = String(cString: mosquitto_strerror(code))
        if code == MOSQ_ERR_ERRNO.rawValue, let errno { text += " (\(errno))" }
        message = text
    }

    public init(_ operation: String, message: String) {
        self.operation = operation
        code = -1
        self.message = message
    }

    public var description: String { "\(operation): \(message)" }

    /// libmosquitto's words for one of its codes (a disconnect callback's reason, say).
    public static func describe(code: Int32) -> String { String(cString: mosquitto_strerror(code)) }

    /// The connection is gone (the broker closed it, or the network did): reconnect.
    public var isConnectionLost: Bool {
        [MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_CONN_REFUSED.rawValue,
         MOSQ_ERR_ERRNO.rawValue, MOSQ_ERR_TLS.rawValue, MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_KEEPALIVE.rawValue].contains(code)
    }
}

/// One MQTT 3.1.1 client on libmosquitto, driven by its owner's event loop: no library thread.
/// The owner watches `socket` for input (and for output while `wantsWrite`), calls `readReady`,
/// `writeReady`, and `housekeeping` about once a second (keep-alive pings). Every libmosquitto
/// call is wrapped here once, with `MQTTError`.
///
/// Contract: one thread at a time. `connect` resolves the broker's name and may block on DNS, so
/// its owner runs it off the loop and touches the client again only once it returned (the node's
/// feed hands it to a helper thread and back). Callbacks run inside `readReady`/`writeReady`/
/// `housekeeping` (and `connect`), on the calling thread.
public final class MQTTClient: @unchecked Sendable {
    public struct Options: Sendable, Equatable {
        public var clientID: String
        public var host: String
        public var port: Int32
        public var keepAliveSeconds: Int32 = 30
        /// TLS: the CA file the broker's certificate must chain to, and this box's certificate and
        /// key (mutual TLS). Nil `caFile`: plain TCP (tests and private networks only).
        public var caFile: String?
        public var certificateFile: String?
        public var keyFile: String?

        public init(clientID: String, host: String, port: Int32, caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
            self.clientID = clientID
            self.host = host
            self.port = port
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// A message as it arrived: its topic and payload (valid only during the call).
    public typealias MessageHandler = (_ topic: String, _ payload: UnsafeRawBufferPointer) -> Void

    public let options: Options
    private let handle: OpaquePointer
    /// The CONNACK's return code (0 accepted).
    public var onConnect: ((Int32) -> Void)?
    /// The connection ended (0: asked for by `disconnect`).
    public var onDisconnect: ((Int32) -> Void)?
    public var onMessage: MessageHandler?
    /// Messages published (QoS 0: handed to the socket).
    public var onPublish: ((Int32) -> Void)?
    /// A SUBACK: the subscription's message id and the QoS granted for each topic (128: refused).
    public var onSubscribe: ((_ mid: Int32, _ granted: [Int32]) -> Void)?

    private static let initialised: Bool = { mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue }()

    public init(options: Options) throws(MQTTError) {
        guard Self.initialised else { throw MQTTError("mosquitto_lib_init", message: "libmosquitto did not initialise") }
        self.options = options
        let h: OpaquePointer
        switch ErrnoCall.nilFails({ mosquitto_new(options.clientID, true, nil) }) {
        case .success(let created): h = created
        case .failure(let e): throw MQTTError("mosquitto_new", message: "\(e)")
        }
        handle = h
        mosquitto_user_data_set(h, Unmanaged.passUnretained(self).toOpaque())
        // 3.1.1: what every public broker speaks; DriveAZ's feed is QoS 0 either way.
        try Self.check("mosquitto_int_option(protocol)") { mosquitto_int_option(h, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)) }
        if let ca = options.caFile {
            try Self.check("mosquitto_tls_set") { mosquitto_tls_set(h, ca, nil, options.certificateFile, options.keyFile, nil) }
            // Verify the broker's certificate and name (SSL_VERIFY_PEER); TLS 1.2 or newer.
            try Self.check("mosquitto_tls_opts_set") { mosquitto_tls_opts_set(h, 1, "tlsv1.2", nil) }
        }
        mosquitto_connect_callback_set(h) { _, user, rc in MQTTClient.owner(user)?.onConnect?(rc) }
        mosquitto_disconnect_callback_set(h) { _, user, rc in MQTTClient.owner(user)?.onDisconnect?(rc) }
        mosquitto_publish_callback_set(h) { _, user, mid in MQTTClient.owner(user)?.onPublish?(mid) }
        mosquitto_subscribe_callback_set(h) { _, user, mid, count, granted in
            let qos = granted.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(0, count)))) } ?? []
            MQTTClient.owner(user)?.onSubscribe?(mid, qos)
        }
        mosquitto_message_callback_set(h) { _, user, message in
            guard let client = MQTTClient.owner(user), let message, let topic = message.pointee.topic else { return }
            let length = Int(max(0, message.pointee.payloadlen))
            client.onMessage?(String(cString: topic), UnsafeRawBufferPointer(start: message.pointee.payload, count: message.pointee.payload == nil ? 0 : length))
        }
    }

    deinit { mosquitto_destroy(handle) }

    private static func owner(_ user: UnsafeMutableRawPointer?) -> MQTTClient? {
        user.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Makes one libmosquitto call; a code other than success is thrown with the errno the call
    /// left (read before the message is built, which may overwrite it).
    ///
    /// OpenSSL's rule for TLS I/O: the calling thread's error queue must be empty before the call,
    /// or a read that merely waits for bytes is taken for a TLS error (SSL_get_error reads the
    /// queue first). libmosquitto clears it only after; anything else on this thread that uses
    /// libcrypto (the exposure engine does, on the node's loop) may have left an entry behind.
    private static func check(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(MQTTError) {
        ERR_clear_error()
        var code = MOSQ_ERR_SUCCESS.rawValue
        let outcome = ErrnoCall.run({ code = call(); return code }, failedWhen: { $0 != MOSQ_ERR_SUCCESS.rawValue })
        if case .failure(let errno) = outcome { throw MQTTError(operation(), code: code, errno: errno) }
    }

    /// Resolves the broker and starts a non-blocking TCP connect (TLS and CONNECT follow in the
    /// loop's reads and writes). May block on DNS: never on the loop.
    public func connect() throws(MQTTError) {
        try Self.check("mosquitto_connect_async(\(options.host):\(options.port))") {
            mosquitto_connect_async(handle, options.host, options.port, options.keepAliveSeconds)
        }
        // libmosquitto opens its socket without SOCK_CLOEXEC: a program started meanwhile by
        // anything in the process would hold the connection open after the box closed it.
        if let fd = socket {
            do {
                try FileDescriptor.setCloseOnExec(fd)
            } catch {
                throw MQTTError("fcntl(FD_CLOEXEC)", code: MOSQ_ERR_ERRNO.rawValue, errno: error.errno)
            }
        }
    }

    /// Whether the connection's socket is closed in programs the process starts (tests).
    public var socketClosesOnExec: Bool { socket.map(FileDescriptor.closesOnExec) ?? false }

    /// The connection's descriptor, or nil when there is none. It changes with every connect.
    public var socket: Int32? {
        let fd = mosquitto_socket(handle)
        return fd >= 0 ? fd : nil
    }

    /// Whether libmosquitto has bytes queued for the socket (watch it for output while true).
    public var wantsWrite: Bool { mosquitto_want_write(handle) }

    /// The socket is readable: reads what arrived (one packet, or all TLS has buffered), running
    /// the callbacks. Throws when the connection is gone.
    public func readReady() throws(MQTTError) {
        try Self.check("mosquitto_loop_read") { mosquitto_loop_read(handle, 1) }
    }

    /// The socket is writable: writes what is queued.
    public func writeReady() throws(MQTTError) {
        try Self.check("mosquitto_loop_write") { mosquitto_loop_write(handle, 1) }
    }

    /// Keep-alive pings and time-outs: about once a second.
    public func housekeeping() throws(MQTTError) {
        try Self.check("mosquitto_loop_misc") { mosquitto_loop_misc(handle) }
    }

    /// Sends SUBSCRIBE; returns its message id (the SUBACK's, in `onSubscribe`).
    @discardableResult
    public func subscribe(_ topic: String, qos: Int32 = 0) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        try Self.check("mosquitto_subscribe(\(topic))") { mosquitto_subscribe(handle, &mid, topic, qos) }
        return mid
    }

    /// Queues a message (QoS 0 by default, never retained): written by the next `writeReady`.
    public func publish(_ topic: String, payload: [UInt8], qos: Int32 = 0) throws(MQTTError) {
        try Self.check("mosquitto_publish(\(topic))") {
            payload.withUnsafeBytes { raw in mosquitto_publish(handle, nil, topic, Int32(raw.count), raw.baseAddress, qos, false) }
        }
    }

    /// Sends DISCONNECT (queued; the owner keeps writing until the socket closes) or, when not
    /// connected, does nothing.
    public func disconnect() {
        _ = mosquitto_disconnect(handle)
    }
}
