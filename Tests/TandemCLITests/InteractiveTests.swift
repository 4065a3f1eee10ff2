import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `tandem` on a pseudo-terminal, as a person at a keyboard would run it: util-linux `script` (always on Debian)
/// gives it a terminal and relays what we type and what it draws. `script` runs the command through `$SHELL -c`;
/// the command is `exec`ed so no shell stays in between (a waiting dash dies of the Ctrl-C meant for `tandem` and
/// `script` would report the shell's 130), and `SHELL` is pinned so every machine runs the same way.
final class TerminalProcess: Sendable {
    private let process: TandemProcess

    init(_ arguments: [String]) throws {
        let command = "exec " + ([TandemBinary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        process = try TandemProcess(["-qfec", command, "/dev/null"], executable: "/usr/bin/script",
                                    environment: ["COLUMNS": "200", "TERM": "xterm", "SHELL": "/bin/sh"])
    }

    var output: String { process.stdout }

    /// What was printed above the status line (the status line's redraws left out), for failure messages.
    var notices: String {
        output.components(separatedBy: "\n").map { $0.components(separatedBy: "\r\u{1B}[2K").filter { !$0.contains("│") } }
            .flatMap { $0 }.filter { !$0.isEmpty }.joined(separator: "\n")
    }

    func type(_ text: String) { process.write(text) }

    func waitForOutput(_ timeout: Double, _ condition: (String) -> Bool) async -> Bool {
        await process.wait(for: timeout) { condition($0.stdout) }
    }

    func waitForExit(_ timeout: Double) async -> Int32? { await process.exitCode(within: timeout) }
}

@Suite("Interactive use on a terminal", .serialized)
struct InteractiveTests {
    @Test("space plays and pauses for the group, the status line redraws in place, q leaves and restores the terminal")
    func playPauseQuit() async throws {
        let host = try TerminalProcess(["host", TandemBinary.sample("countdown.webm"), "--headless", "--bind", "127.0.0.1",
                                        "--port", "0", "--name", "ann"])
        // As a person would: press space once the status line shows the file loaded (its duration) and the clock.
        #expect(await host.waitForOutput(30) { $0.contains("Invite: tandem://") && $0.contains("/0:40") && $0.contains("clock ±") },
                "\(host.output)")
        #expect(host.output.contains("keys (terminal and video window):") && host.output.contains("space play/pause"))
        host.type(" ")
        #expect(await host.waitForOutput(20) { $0.contains("ann played from 0:00") && $0.contains("▶ 0:0") }, "\(host.notices)")
        host.type(" ")
        #expect(await host.waitForOutput(20) { $0.contains("ann paused at") && $0.contains("⏸") })
        // The status line redraws in place: carriage return and erase-line, never a scrolling stream of lines.
        #expect(host.output.contains("\r\u{1B}[2K"))
        host.type("q")
        #expect(await host.waitForExit(10) == 0)
        #expect(host.output.hasSuffix("\u{1B}[?25h") || host.output.contains("\u{1B}[?25h"))
    }

    @Test("Ctrl-C leaves cleanly and restores the terminal")
    func controlC() async throws {
        let host = try TerminalProcess(["host", TandemBinary.sample("countdown.webm"), "--headless", "--bind", "127.0.0.1",
                                        "--port", "0"])
        #expect(await host.waitForOutput(30) { $0.contains("Invite: tandem://") })
        // At once, as an impatient person would: the signal must already be trapped when the invite shows.
        host.type("\u{03}")
        let code = await host.waitForExit(10)
        #expect(code == 0, "exit \(code.map(String.init) ?? "none"): \(host.output.suffix(600))")
        #expect(host.output.contains("\u{1B}[?25h"))
    }
}
