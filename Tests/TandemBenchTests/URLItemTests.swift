import Foundation
import Testing
import Tandem
import TandemPeer
@testable import TandemBench

/// A throwaway HTTP server on 127.0.0.1 serving the samples with byte ranges (Python's http.server), with an ETag.
final class SampleHTTPServer {
    let process = Process()
    let port: Int

    static var python: String? {
        ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let script = """
        import http.server, os, re, sys
        root = sys.argv[1]
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def do_GET(self):
                path = os.path.join(root, os.path.basename(self.path.split('?')[0]))
                if not os.path.isfile(path):
                    self.send_error(404); return
                data = open(path, 'rb').read()
                start, end = 0, len(data) - 1
                m = re.match(r'bytes=(\\d+)-(\\d*)', self.headers.get('Range', ''))
                if m:
                    start = int(m.group(1)); end = min(int(m.group(2)), end) if m.group(2) else end
                    self.send_response(206)
                    self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, end, len(data)))
                else:
                    self.send_response(200)
                self.send_header('Accept-Ranges', 'bytes')
                self.send_header('ETag', '"%x-%x"' % (len(data), int(os.path.getmtime(path))))
                self.send_header('Content-Length', str(end - start + 1))
                self.end_headers()
                try: self.wfile.write(data[start:end + 1])
                except (BrokenPipeError, ConnectionResetError): pass
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        print('port %d ready' % server.server_address[1], flush=True)
        server.serve_forever()
        """

    init(serving directory: URL) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: Self.python!)
        process.arguments = ["-u", "-c", Self.script, directory.path]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while !text.contains("ready"), Date() < deadline {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let range = text.range(of: "port "), let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
            kill(process.processIdentifier, SIGKILL)
            throw BenchError("the test HTTP server did not start: \(text)")
        }
        self.port = port
    }

    func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    deinit {
        // Not waitUntilExit: on Linux it can wait forever on a child that was already signalled.
        kill(process.processIdentifier, SIGKILL)
    }
}

/// An item that is a URL (`tandem host http://…/movie.webm`): every peer streams it from there itself, and the
/// fingerprints agree because each is taken from what the server sends.
@Suite("URLs as items", .serialized, .enabled(if: SampleHTTPServer.python != nil, "needs python3 for a loopback server"))
struct URLItemTests {
    @Test("the host hosts a URL; a joiner without a file plays the same URL itself, with the same fingerprint, in step")
    func joinerStreamsTheURL() async throws {
        let server = try SampleHTTPServer(serving: try #require(Samples.directory))
        let url = server.url("countdown.webm")
        let ensemble = try await Ensemble.start(file: url, title: "url")
        let ann = try await ensemble.add(.init(name: "ann"))
        var setup = Ensemble.PeerSetup(name: "bob")
        setup.streams = true  // joins as `tandem join` without a file does
        let bob = try await ensemble.add(setup)
        #expect(await StreamBench.eventually(15) { ann.player.mediaInfo != nil && bob.player.mediaInfo != nil })
        #expect(ann.player.loadedURI == url)
        #expect(bob.player.loadedURI == url, "bob loaded \(bob.player.loadedURI ?? "nothing")")
        // The fingerprint of the URL is the file's: the same bytes, wherever they come from.
        let file = try Samples.path("countdown.webm")
        let local = try await MediaProbe.probe(file)
        let remote = try await MediaProbe.probe(url)
        #expect(remote.contentID != nil && remote.contentID == local.contentID)
        #expect(bob.player.mediaInfo?.contentID == remote.contentID)
        #expect(ann.player.mediaInfo?.contentID == remote.contentID)
        // The activity names the URL (nothing is served from the host's machine) and the file name in it.
        let activity = MediaActivity(probe: remote, path: url, title: nil, subtitle: nil, type: nil, fallbackURL: nil)
        #expect(activity.url == url && activity.sharedByHost == nil && activity.fileName == "countdown.webm")
        #expect(activity.itemID == local.contentID)

        let playAt = SystemMonotonicClock().now.nanoseconds
        await ann.peer.play()
        for _ in 0..<25 {
            try await Task.sleep(for: .milliseconds(200))
            ensemble.collect()
        }
        let showings: [GroundTruth.Showing] = ensemble.withTruth { $0.showings(since: playAt + TimeSpan.seconds(2).nanoseconds) }
        let spreads = showings.map(\.spread).sorted()
        #expect(showings.count >= 30, "showings: \(showings.count)")
        let median = spreads.isEmpty ? Int64.max : spreads[spreads.count / 2]
        #expect(median < 40_000_000, "median skew \(Double(median) / 1e6) ms")
        await ensemble.finish()
    }
}
