#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// The controlling terminal: raw key input and a single status line that redraws in place.
///
/// Raw mode is undone on every way out (normal exit, `q`, Ctrl-C, SIGTERM), so the user's shell is never left broken.
package final class Terminal: Sendable {
    package static let shared = Terminal()

    private let state = Mutex<State>(State())
    private struct State {
        var saved: termios?
        var statusLine = ""
    }

    /// Whether stdin is a terminal (interactive mode) or not (scripted mode).
    package static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) != 0 }
    package static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
    package static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    /// Puts the terminal into raw mode (no echo, no line buffering; signals stay on so Ctrl-C still works).
    package func enterRawMode() {
        state.withLock { s in
            guard s.saved == nil else { return }
            var original = termios()
            guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
            s.saved = original
            var raw = original
            raw.c_lflag &= ~tcflag_t(ECHO | ICANON)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        }
        atexit { Terminal.shared.restore() }
        writeRaw(STDOUT_FILENO, "\u{1B}[?25l")  // hide cursor
    }

    /// Restores the terminal as it was. Safe to call more than once, and from a signal path.
    package func restore() {
        state.withLock { s in
            guard var saved = s.saved else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            s.saved = nil
            if !s.statusLine.isEmpty { writeRaw(STDOUT_FILENO, "\r\u{1B}[2K") }
            s.statusLine = ""
            writeRaw(STDOUT_FILENO, "\u{1B}[?25h")  // show cursor
        }
    }

    /// Redraws the status line in place, cut to the terminal's width so it never wraps.
    package func status(_ line: String) {
        let width = Terminal.columns
        let fitted = line.count < width ? line : String(line.prefix(max(1, width - 2))) + "…"
        state.withLock { s in
            s.statusLine = fitted
            writeRaw(STDOUT_FILENO, "\r\u{1B}[2K" + fitted)
        }
    }

    /// The terminal's width in columns (80 when it cannot be read).
    package static var columns: Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 80
    }

    /// Prints a notice above the status line, then redraws the status line.
    package func notice(_ text: String) {
        state.withLock { s in
            writeRaw(STDOUT_FILENO, "\r\u{1B}[2K" + text + "\n" + s.statusLine)
        }
    }

    /// Bytes from stdin, and lines from it, each read on one thread for the whole process (`SharedInput`).
    private static let keyInput = SharedInput<[UInt8]> {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(STDIN_FILENO, &buffer, buffer.count)
        return n > 0 ? Array(buffer[0..<n]) : nil
    }
    private static let lineInput = SharedInput { readLine(strippingNewline: true) }
    package static func keyBytes() -> AsyncStream<[UInt8]> { keyInput.stream() }
    package static func lines() -> AsyncStream<String> { lineInput.stream() }
}

/// Writes one line to stderr.
package func printError(_ text: String) {
    Terminal.shared.restore()
    writeRaw(STDERR_FILENO, text + "\n")
}

/// Writes a string straight to a file descriptor (unbuffered, safe from any thread).
package func writeRaw(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { return }
        offset += n
    }
}

/// Prints one line to stdout, unbuffered (JSON events and reports).
package func printLine(_ text: String) { writeRaw(STDOUT_FILENO, text + "\n") }
