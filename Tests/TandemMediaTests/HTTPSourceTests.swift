import Foundation
import Testing
import TandemCore
@testable import TandemMedia

/// A throwaway HTTP server on the loopback interface serving the samples directory (Python's http.server).
private final class LoopbackHTTPServer {
    let process = Process()
    let port: Int

    static var python: String? {
        ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// http.server plus byte ranges (demuxers seek to read durations, and GStreamer requires ranges for that).
    static let rangeServer = """
        import http.server, os, re, sys
        root = sys.argv[1]
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def do_GET(self):
                path = os.path.join(root, os.path.basename(self.path))
                if not os.path.isfile(path):
                    self.send_error(404); return
                data = open(path, 'rb').read()
                start, end = 0, len(data) - 1
                m = re.match(r'bytes=(\\d+)-(\\d*)', self.headers.get('Range', ''))
                if m:
                    start = int(m.group(1)); end = int(m.group(2)) if m.group(2) else end
                    self.send_response(206)
                    self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, end, len(data)))
                else:
                    self.send_response(200)
                self.send_header('Accept-Ranges', 'bytes')
                self.send_header('Content-Length', str(end - start + 1))
                self.end_headers()
                try: self.wfile.write(data[start:end + 1])
                except (BrokenPipeError, ConnectionResetError): pass
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        print('Serving HTTP on 127.0.0.1 port %d (x) ...' % server.server_address[1], flush=True)
        server.serve_forever()
        """

    init(serving directory: URL) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: Self.python!)
        process.arguments = ["-u", "-c", Self.rangeServer, directory.path]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while !text.contains(") ..."), Date() < deadline {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let range = text.range(of: "port "),
              let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
            process.terminate()
            throw PlaybackError.engineFailure("the test HTTP server did not start: \(text)")
        }
        self.port = port
    }

    func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    deinit {
        // Not waitUntilExit: on Linux it can wait forever on a child that was already signalled.
        kill(process.processIdentifier, SIGKILL)
    }
}

@Suite("HTTP sources", .serialized, .enabled(if: LoopbackHTTPServer.python != nil, "needs python3 for a loopback server"))
struct HTTPSourceTests {
    @Test("an http:// URI loads through GStreamer's own source")
    func loadsOverHTTP() async throws {
        let server = try LoopbackHTTPServer(serving: Samples.directory)
        let player = try Samples.headlessPlayer()
        let info = try await player.load(server.url("countdown.webm"))
        #expect(abs((info.duration?.nanoseconds ?? 0) - TimeSpan.seconds(40).nanoseconds) < TimeSpan.milliseconds(50).nanoseconds)
        #expect(info.hasAudio && info.hasVideo)
        // And it plays: item time advances over HTTP too.
        try await player.play(from: ItemTime(nanoseconds: 0), atSessionTime: SessionInstant(nanoseconds: player.sessionTimeNow().nanoseconds + TimeSpan.milliseconds(200).nanoseconds), rate: 1)
        try await sleep(ms: 600)
        #expect(try await player.pause().nanoseconds > TimeSpan.milliseconds(200).nanoseconds)
        // The content fingerprint is taken over HTTP (two range requests), and is the file's.
        #expect(info.contentID != nil && info.contentID == MediaFingerprint.ofFile(atPath: Samples.countdown))

        await #expect(throws: PlaybackError.self) { _ = try await player.load(server.url("no-such-file.webm")) }
        do {
            _ = try await player.load(server.url("no-such-file.webm"))
        } catch {
            guard case .unreachable(let uri, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(uri.hasSuffix("no-such-file.webm"))
        }
        await player.close()
        withExtendedLifetime(server) {}
    }
}
