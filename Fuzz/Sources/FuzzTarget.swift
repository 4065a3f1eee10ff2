import Foundation
import TandemWireFuzzing

/// libFuzzer's entry point: one input through everything Tandem decodes from the network.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    WireFuzzing.exercise(bytes)
    return 0
}

#if TANDEM_LIBFUZZER
/// libFuzzer's driver, linked in by `-sanitize=fuzzer`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<Int32>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// The package manager links an executable's `main` to this symbol, so libFuzzer's own `main` is not used:
/// hand the arguments to its driver instead.
@_cdecl("tandem_fuzz_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
#else
/// Built without libFuzzer (a plain `swift build`), the target replays inputs instead: every file named on the
/// command line, and every file in a directory named there (a crash file, or the corpus).
@main
struct ReplayInputs {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: tandem-fuzz FILE-OR-DIRECTORY… (replays inputs; `make fuzz` runs libFuzzer)\n".utf8))
            exit(64)
        }
        var count = 0
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("tandem-fuzz: no such file: \(path)\n".utf8))
                exit(66)
            }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { "\(path)/\($0)" }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                WireFuzzing.exercise(Array(data))
                count += 1
            }
        }
        print("replayed \(count) inputs without a crash")
    }
}
#endif
