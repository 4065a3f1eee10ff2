// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Tandem",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Tandem", targets: ["Tandem"]),
        .library(name: "TandemCore", targets: ["TandemCore"]),
        .library(name: "TandemTesting", targets: ["TandemTesting"]),
        .executable(name: "tandem", targets: ["tandem"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // GStreamer (and Xlib, for the video window the player owns) found through pkg-config.
        .systemLibrary(
            name: "CTandemGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-base-1.0 gstreamer-pbutils-1.0 gstreamer-audio-1.0 gstreamer-video-1.0 gstreamer-tag-1.0 x11",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libx11-dev"])]
        ),
        // C helpers for what Swift cannot import (macros, varargs, signals, streaming-thread code).
        .target(name: "CTandemGStreamerShim", dependencies: ["CTandemGStreamer"]),
        // epoll and timerfd for the bench's bare relay (`tandem bench relay --floor`), which Swift's Glibc leaves out,
        // and the kernel's receive stamps for TandemNet's clock-probe datagrams (SIOCGSTAMPNS, an ioctl macro).
        .target(name: "CTandemBareSockets"),
        // Port mapping on home routers: Debian's libnatpmp (NAT-PMP) and libminiupnpc (UPnP-IGD), maintained by the
        // miniupnp project, behind a few C calls (ARCHITECTURE.md, "Reaching a host").
        .target(name: "CTandemPortMapping", linkerSettings: [.linkedLibrary("natpmp"), .linkedLibrary("miniupnpc")]),
        .target(name: "TandemPortMapping", dependencies: ["TandemCore", "CTandemPortMapping"]),
        // Pure Swift model: no GStreamer, no sockets, no wall clock.
        .target(name: "TandemCore"),
        // SHA-256, MD5, HMAC-SHA256, HKDF and AES-GCM from Debian's OpenSSL libcrypto (libssl-dev), behind the names
        // Tandem's code uses for them; OpenSSL's own headers stay in the C file.
        .target(name: "CTandemCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        .target(name: "TandemCrypto", dependencies: ["CTandemCrypto"]),
        // TLS from Debian's OpenSSL libssl over memory buffers, and the SwiftNIO handler that puts it in a pipeline
        // (the relay's TLS, invites' pinned certificates, Syncplay's STARTTLS).
        .target(name: "CTandemTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        .target(name: "TandemTLS", dependencies: [
            "CTandemTLS", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOTLS", package: "swift-nio"),
        ]),
        .target(
            name: "TandemMedia",
            dependencies: ["TandemCore", "CTandemGStreamerShim", "CTandemGStreamer",
                           "TandemCrypto",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "TandemNet",
            dependencies: [
                "TandemCore", "CTandemBareSockets",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                "TandemTLS",
                "TandemCrypto",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What an operator of a relay sees: the server's counters bound to swift-metrics and a Prometheus registry
        // of the server's own, and the health and metrics HTTP listener (`tandem serve --metrics`).
        .target(
            name: "TandemOps",
            dependencies: [
                "TandemCore", "TandemNet",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // What a relay keeps across a restart (`tandem serve --state-dir`): sessions' snapshots in SQLite (Debian's
        // libsqlite3, through its C API), behind TandemNet's `SessionStateStore`.
        .systemLibrary(name: "CTandemSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "TandemRelayState",
            dependencies: [
                "TandemCore", "TandemNet", "CTandemSQLite",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Fakes for tests and benchmarks: a manual clock, an in-memory network, simulated links and link impairment.
        .target(name: "TandemTesting", dependencies: [
            "TandemCore", "TandemNet", .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .target(name: "Tandem", dependencies: ["TandemCore", "TandemMedia", "TandemNet"]),
        // A participant's session driver: player, connection and coordinator wired together, user commands, the
        // shared media activity. No terminal, no argument parsing.
        .target(name: "TandemPeer", dependencies: [
            "Tandem", "TandemSyncplay", "TandemPortMapping",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // Benchmarks (sync, relay, clock, soak), ensembles of peers, baseline policies, reports and plots.
        .target(name: "TandemBench", dependencies: [
            "TandemPeer", "Tandem", "TandemSyncplay", "TandemTesting", "CTandemBareSockets",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Histogram", package: "hdrhistogram-swift"),
        ]),
        // Syncplay interop: its wire protocol, its client rules as a state machine, and a connection over SwiftNIO.
        .target(name: "TandemSyncplay", dependencies: [
            "TandemCore", "TandemCrypto",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            "TandemTLS",
            .product(name: "NIOTLS", package: "swift-nio"),
        ]),
        // The command line: argument parsing, the terminal, wiring.
        .executableTarget(
            name: "tandem",
            dependencies: [
                "Tandem", "TandemPeer", "TandemBench", "TandemSyncplay", "TandemOps", "TandemRelayState",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // libFuzzer target over everything decoded from the network (`make fuzz`); a plain build replays files.
        // The harness that runs hostile bytes through every decoder, kept out of the shipped TandemNet.
        .target(name: "TandemWireFuzzing", dependencies: [
            "TandemNet", "TandemCore",
            .product(name: "NIOCore", package: "swift-nio"),
        ], path: "Fuzz/Harness"),
        .executableTarget(name: "tandem-fuzz", dependencies: ["TandemWireFuzzing"], path: "Fuzz/Sources"),
        // Apps embedding the library, each small enough to read (docs/EMBEDDING.md and README.md quote them):
        // built with everything else, and run by ExampleProcessTests.
        .executableTarget(name: "WatchTogether", dependencies: ["Tandem"], path: "Examples/WatchTogether"),
        .executableTarget(name: "CustomEngine", dependencies: ["Tandem"], path: "Examples/CustomEngine"),
        .executableTarget(name: "MessagesAndJournal", dependencies: ["Tandem"], path: "Examples/MessagesAndJournal"),
        // Test support shared by test targets: an X server (Xvfb) of the test's own and what it says of a window.
        .target(name: "TandemTestDisplay", dependencies: ["CTandemGStreamerShim"], path: "Tests/Support/XDisplay"),
        .testTarget(name: "TandemCoreTests", dependencies: ["TandemCore", "TandemTesting"]),
        .testTarget(name: "TandemMediaTests", dependencies: ["TandemMedia", "TandemCore", "TandemPeer", "TandemTestDisplay"]),
        .testTarget(name: "TandemNetTests", dependencies: [
            "TandemNet", "TandemCore", "TandemTesting", "TandemWireFuzzing", "TandemTLS",
            .product(name: "Logging", package: "swift-log"), .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOTLS", package: "swift-nio"),
        ]),
        // Test support: a plain HTTP/1 client over real sockets, for the operator's listener.
        .target(name: "TandemTestHTTP", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ], path: "Tests/Support/HTTP"),
        .testTarget(name: "TandemOpsTests", dependencies: ["TandemOps", "TandemNet", "TandemCore", "TandemTestHTTP"]),
        .testTarget(name: "TandemCLITests", dependencies: ["tandem", "TandemCore", "TandemPeer", "TandemSyncplay", "TandemBench",
                                                           "TandemTestDisplay", "TandemTestHTTP"]),
        .testTarget(name: "TandemPeerTests", dependencies: [
            "TandemPeer", "Tandem", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .testTarget(name: "TandemBenchTests", dependencies: ["TandemBench", "TandemPeer", "Tandem", "TandemTesting"]),
        .testTarget(name: "TandemTests", dependencies: ["Tandem", "TandemPeer", "TandemSyncplay"]),
    ]
)
