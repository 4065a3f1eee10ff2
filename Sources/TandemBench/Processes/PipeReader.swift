import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a child process's pipe to its end with blocking reads on a thread of its own, handing each piece to
/// `body`. No dispatch source watches the descriptor: libdispatch on Linux has crashed in its event loop
/// (`_dispatch_event_loop_drain`) when a descriptor it watched (`FileHandle.readabilityHandler`) closed underneath
/// it, and that took a whole test run with it.
package enum PipeReader {
    /// Makes a write to a child that has gone (its stdin's reader closed) fail with `EPIPE` instead of killing this
    /// whole process with SIGPIPE: a test that sends a line to a process that already exited then fails alone,
    /// instead of taking every test after it down.
    package static func ignoreBrokenPipes() { _ = ignoringBrokenPipes }

    private static let ignoringBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    package static func drain(_ handle: FileHandle, _ body: @escaping @Sendable (Data) -> Void) {
        nonisolated(unsafe) let handle = handle
        let thread = Thread {
            let descriptor = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    body(Data(buffer[..<count]))
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break  // the end (every writer closed it), or an error
                }
            }
            try? handle.close()
        }
        thread.name = "pipe-reader"
        thread.start()
    }
}
