// swift-tools-version:6.1
// Vigil: a headless edge node for disaster shelters.
//
// Layering: ARCHITECTURE.md lists every target in order, each using only those above it
// (scripts/check-layers proves it against the dependencies below). In short: C shims ->
// VigilSystem -> VigilLog, VigilEvents -> the pure cores (VigilCore, VigilExposure, ...) ->
// the adapters (VigilRadio, VigilBoard) -> VigilNode -> vigil (CLI); the hub's VigilHubProtocol
// is pure and shared with the box, and nothing of the box depends on VigilHub.
// VigilHex (the hex codec, pure) sits below both VigilSystem, which re-exports it, and the pure
// targets. Pure targets (VigilEvents, VigilCore, VigilExposure) import no I/O layer, read no clock
// and touch no files; each target declares exactly the modules it imports. scripts/check-layers
// checks both (scripts/test runs it first).
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "vigil",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vigil", targets: ["vigil"]),
        .executable(name: "vigil-hub", targets: ["vigil-hub"]),
        .executable(name: "vigil-bench", targets: ["VigilBench"]),
        .library(name: "VigilLog", targets: ["VigilLog"]),
        .library(name: "VigilCore", targets: ["VigilCore"]),
        .library(name: "VigilNode", targets: ["VigilNode"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        // HMAC-SHA256 for the alert frames' tags and the rotating presence id, Ed25519 for signed frames.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        // HTTPRequestPart, the HTTP/1 parts the servers' request deadlines watch (Hummingbird's own).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.28.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // The hub (issue 11): its HTTP server and TLS, its database, and the box's HTTPS client.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.20.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.25.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.25.0"),
        // The box's /metrics (issue 13): the node records through swift-metrics' API; the page
        // serves them in Prometheus's format.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
    ],
    targets: [
        // C shim targets: one per C library, prefixed, nothing but headers and links.
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        // Eclipse Mosquitto's MQTT client (issue 15's hazard feed), driven from the node's loop.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // OpenSSL's libcrypto: one AES key setup and 144 ECB blocks per diagnosis key in one call,
        // 15.7x the matching rate of one swift-crypto call per RPI (gaen_match_keys_per_s, docs/benchmarks.md "Benchmarks").
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "CVigilLinux"),
        // libxml2: CAP 1.2 public warnings are parsed from memory with it (issue 32, docs/warnings.md).
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        // libxmlsec1 (OpenSSL backend): CAP documents' XML signatures. Its API is macros over the
        // backend, so one C file wraps the one use (CVigilXMLSec); this carries its flags.
        .systemLibrary(name: "CXMLSec", pkgConfig: "xmlsec1-openssl", providers: [.apt(["libxmlsec1-dev"])]),
        // SwiftPM passes the system library's include paths on, not its defines: these are
        // `pkg-config --cflags xmlsec1-openssl` of Debian 12's libxmlsec1 1.2.37 (the OpenSSL
        // backend, xmlSecSize as unsigned int). The shim checks the library's version at start.
        .target(name: "CVigilXMLSec", dependencies: ["CXMLSec"], cSettings: [
            .define("XMLSEC_CRYPTO_OPENSSL", to: "1"), .define("XMLSEC_NO_SIZE_T"), .define("XMLSEC_OPENSSL3_ENGINES", to: "1"),
            .define("XMLSEC_NO_GOST", to: "1"), .define("XMLSEC_NO_GOST2012", to: "1"),
            .define("XMLSEC_NO_CRYPTO_DYNAMIC_LOADING", to: "1"), .define("__XMLSEC_FUNCTION__", to: "__func__"),
        ]),

        // Hex text for bytes and back: pure, so the pure layers can use it too.
        .target(name: "VigilHex", swiftSettings: strict),
        // CAP 1.2 documents read into values: libxml2 from memory (bounded, no DTD, no network),
        // then a strict decoder; no clock, no files, so the core can use the values.
        .target(name: "VigilCAP", dependencies: ["CLibXML2", "CVigilXMLSec"], swiftSettings: strict),
        // Reading a CAP feed over HTTPS: the box's feeds and the hub's relay.
        .target(
            name: "VigilWarningFeeds",
            dependencies: [
                "VigilCAP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // errno and syscalls, wrapped once.
        .target(name: "VigilSystem", dependencies: ["CVigilLinux", "VigilHex"], swiftSettings: strict),
        // The durable, append-only record log over LMDB.
        .target(
            name: "VigilLog",
            dependencies: ["CLMDB", "VigilSystem"],
            swiftSettings: strict
        ),
        // Typed events and their versioned binary encoding.
        .target(
            name: "VigilEvents",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        // Calls for help, the parts outside bytes decide (issue 27): E.164 phone numbers, SMS
        // replies and gammu-smsd's inbox files. Pure (the hex codec only): fuzzed, below VigilCore,
        // which checks addresses with it.
        .target(name: "VigilCalls", dependencies: ["VigilHex"], swiftSettings: strict),
        // SIA DC-09 with Contact ID (ADM-CID): an alarm receiving centre's protocol, frames out and
        // replies in, optional AES. Pure: time, pad bytes and replies come from the caller; fuzzed.
        .target(
            name: "VigilAlarmCentre",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // Pure projections: (State, Event) -> State. No clocks, no I/O.
        .target(name: "VigilCore", dependencies: ["VigilEvents", "VigilHex", "VigilCalls", "VigilCAP"], swiftSettings: strict),
        // The hub sync's wire format and rules, shared by the box and the hub: what leaves a box,
        // an event's identity and content hash, the upload and acknowledgement documents. Pure.
        .target(
            name: "VigilHubProtocol",
            dependencies: ["VigilEvents", "VigilHex", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: strict
        ),
        // The Attribute Protocol and GATT (server and client roles of one ATT bearer), as bytes
        // in and out: pure, so every PDU a peer can send is tested and fuzzed without a radio.
        .target(name: "VigilGATT", swiftSettings: strict),
        // SAE J2735 messages in UPER (the regional hazard feed's PSMs): pure, fuzzed.
        .target(name: "VigilJ2735", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")], swiftSettings: strict),
        // The network's statements: box and network keys, certificates, revocations (docs/signed-frames.md).
        // Pure: shared by the radio's signed frames and the hub that certifies boxes.
        .target(name: "VigilTrust", dependencies: [.product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // Radio adapters: the simulation and BlueZ's HCI socket; the over-the-air frames.
        .target(
            name: "VigilRadio",
            dependencies: [
                // VigilCore for the one back-off rule the radio shares with the outbox.
                "VigilEvents", "VigilSystem", "VigilCore", "VigilTrust", "CBlueZ",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // MQTT over libmosquitto: a client whose socket the node's loop watches (the hazard feed).
        .target(name: "VigilMQTT", dependencies: ["CMosquitto", "COpenSSL", "VigilSystem"], swiftSettings: strict),
        // Exposure contacts (GAEN): key schedule, key export files, matching. Pure: it takes bytes
        // and randomness from its caller (VigilNode's DiagnosisKeyFiles reads the files).
        .target(
            name: "VigilExposure",
            dependencies: [
                "VigilEvents", "VigilCore", "VigilHex", "COpenSSL",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strict
        ),
        // Board adapters: the simulated board and libgpiod.
        .target(
            name: "VigilBoard",
            dependencies: ["VigilCore", "VigilEvents", "VigilSystem", "CGPIOD"],
            swiftSettings: strict
        ),
        // The node runtime: the one event loop, sources, checkpoints, control socket.
        .target(
            name: "VigilNode",
            dependencies: [
                "VigilLog", "VigilEvents", "VigilCore", "VigilRadio", "VigilBoard", "VigilSystem", "VigilExposure",
                "VigilHubProtocol", "VigilHex", "VigilAccess", "VigilGATT", "VigilJ2735", "VigilMQTT", "VigilCalls",
                "VigilAlarmCentre", "VigilCAP", "VigilWarningFeeds",
                // SHA-256 of the hub's key files (checked against the hash the feed offered).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // Access to the servers of the box and the hub: password hashes (scrypt), self-signed TLS
        // identities.
        .target(
            name: "VigilAccess",
            dependencies: [
                "VigilHubProtocol", "VigilSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // Both servers' connection caps wrap HummingbirdCore's HTTP/1 and TLS channels.
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The box's own page and API (Hummingbird, TLS): beside the node's loop, reading its
        // snapshots and sending it commands.
        .target(
            name: "VigilWeb",
            dependencies: [
                "VigilNode", "VigilAccess", "VigilHubProtocol", "VigilSystem", "VigilCAP",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The API's description: Generated/OpenAPIDocument.swift embeds it (scripts/generate-openapi-swift).
            exclude: ["openapi.yaml"],
            swiftSettings: strict
        ),
        // The hub: an HTTP server (Hummingbird, TLS) on PostgreSQL, keeping no state of its own.
        .target(
            name: "VigilHub",
            dependencies: [
                "VigilHubProtocol", "VigilEvents", "VigilCore", "VigilHex", "VigilSystem", "VigilExposure", "VigilAccess", "VigilTrust", "VigilCAP", "VigilWarningFeeds",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["openapi.yaml"],
            swiftSettings: strict
        ),
        // libFuzzer targets for every parser of outside bytes (scripts/fuzz builds it with the
        // fuzzer; an ordinary build replays inputs: `vigil-fuzz TARGET PATH...`).
        .executableTarget(
            name: "vigil-fuzz",
            dependencies: ["VigilRadio", "VigilCore", "VigilEvents", "VigilExposure", "VigilHubProtocol", "VigilLog", "VigilNode", "VigilAccess",
                           "VigilGATT", "VigilJ2735", "VigilCalls", "VigilAlarmCentre", "VigilCAP"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "vigil-hub",
            dependencies: [
                "VigilHub", "VigilSystem", "VigilWarningFeeds",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "vigil",
            dependencies: [
                "VigilNode", "VigilWeb", "VigilAccess",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"), "VigilLog", "VigilEvents", "VigilCore", "VigilRadio", "VigilBoard", "VigilSystem", "VigilExposure",
                "VigilHubProtocol", "VigilGATT", "VigilCAP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strict
        ),
        // Benchmarks live apart from tests; scripts/bench runs this in release mode.
        .executableTarget(
            name: "VigilBench",
            dependencies: [
                "VigilLog", "VigilEvents", "VigilCore", "VigilNode", "VigilBoard", "VigilRadio", "CLMDB", "VigilSystem", "VigilExposure",
                "VigilHub", "VigilHubProtocol", "VigilWeb", "VigilGATT", "VigilJ2735", "VigilTestSupport", "VigilAlarmCentre", "VigilCAP", "VigilWarningFeeds",
                .product(name: "Logging", package: "swift-log"),
                // The hub's figures: a real hub in this process, its database, 200 HTTPS clients.
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),

        // The tests' shared helpers (one temporary directory); a library only tests depend on.
        // What tests (and the feed's benchmark) share: temporary directories, child processes, a
        // real Mosquitto broker and a PSM publisher.
        .target(name: "VigilTestSupport", dependencies: ["VigilJ2735", "VigilMQTT", "VigilSystem"], path: "Tests/VigilTestSupport", swiftSettings: strict),
        .testTarget(name: "VigilSystemTests", dependencies: ["VigilSystem", "VigilTestSupport"], swiftSettings: strict),
        .testTarget(name: "VigilLogTests", dependencies: ["VigilLog", "VigilSystem", "VigilTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "VigilEventsTests",
            dependencies: ["VigilEvents", "VigilSystem", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            resources: [.copy("Golden")],
            swiftSettings: strict
        ),
        .testTarget(name: "VigilCoreTests", dependencies: ["VigilCore", "VigilEvents", "VigilCAP"], swiftSettings: strict),
        .testTarget(
            name: "VigilExposureTests",
            dependencies: [
                "VigilExposure", "VigilCore", "VigilEvents", "VigilSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "VigilGATTTests", dependencies: ["VigilGATT"], swiftSettings: strict),
        .testTarget(name: "VigilCallsTests", dependencies: ["VigilCalls", "VigilSystem", "VigilTestSupport"], swiftSettings: strict),
        .testTarget(name: "VigilAlarmCentreTests", dependencies: ["VigilAlarmCentre", "VigilSystem", "VigilTestSupport"], swiftSettings: strict),
        .testTarget(name: "VigilJ2735Tests", dependencies: ["VigilJ2735"], resources: [.copy("Vectors")], swiftSettings: strict),
        .testTarget(name: "VigilHexTests", dependencies: ["VigilHex"], swiftSettings: strict),
        .testTarget(name: "VigilCAPTests", dependencies: ["VigilCAP", "VigilTestSupport"], resources: [.copy("Corpus")], swiftSettings: strict),
        .testTarget(name: "VigilHubProtocolTests", dependencies: ["VigilHubProtocol", "VigilEvents"], swiftSettings: strict),
        .testTarget(name: "VigilBoardTests", dependencies: ["VigilBoard"], swiftSettings: strict),
        .testTarget(name: "VigilMQTTTests", dependencies: ["VigilMQTT"], swiftSettings: strict),
        .testTarget(
            name: "VigilAccessTests",
            dependencies: ["VigilAccess", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VigilRadioTests",
            dependencies: ["VigilRadio", "VigilCore", "VigilEvents", "VigilSystem", "VigilTestSupport"],
            // Signed frames' test vectors, made by scripts/signed-frame-vectors (Python cryptography).
            resources: [.copy("Vectors")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VigilNodeTests",
            dependencies: [
                "VigilNode", "VigilLog", "VigilCore", "VigilEvents", "VigilRadio", "VigilBoard", "VigilSystem", "VigilExposure", "VigilGATT", "VigilJ2735", "VigilMQTT", "VigilHex", "VigilCalls", "VigilHubProtocol",
                "VigilTestSupport", "VigilCAP", "VigilWarningFeeds",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VigilHubTests",
            dependencies: [
                "VigilHub", "VigilHubProtocol", "VigilNode", "VigilLog", "VigilEvents", "VigilCore", "VigilSystem",
                "VigilHex", "VigilTestSupport", "VigilExposure", "VigilAccess", "VigilRadio", "VigilCAP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VigilWebTests",
            dependencies: [
                "VigilWeb", "VigilNode", "VigilCore", "VigilSystem", "VigilTestSupport", "VigilBoard", "VigilEvents", "VigilAccess", "VigilCAP",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VigilCLITests",
            dependencies: [
                "VigilSystem", "VigilLog", "VigilEvents", "VigilExposure", "VigilTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
    ]
)
