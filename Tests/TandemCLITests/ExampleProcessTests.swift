import Foundation
import Testing

/// The apps under Examples/ (which docs/EMBEDDING.md and README.md quote) run to completion as their own processes
/// and do what they say: players in step, engines following the group, messages and attachments arriving, a refusal.
@Suite("The examples, run as processes", .serialized)
struct ExampleProcessTests {
    /// An example's executable, built beside `tandem`.
    static func example(_ name: String) -> String {
        URL(fileURLWithPath: TandemBinary.path).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Runs an example to its end (at most `timeout` seconds) and returns what it printed, expecting exit code 0.
    static func run(_ name: String, _ arguments: [String] = [], timeout: Double = 60) async throws -> String {
        let process = try TandemProcess(arguments, executable: example(name))
        defer { process.stop() }
        let code = await process.exitCode(within: timeout)
        #expect(code == 0, """
            \(name) exited with \(code.map(String.init) ?? "nothing in time")
            \(process.stdout)
            \(process.stderr)
            """)
        return process.stdout
    }

    /// The numbers of the first line matching `pattern`'s two captures.
    static func pair(in output: String, _ pattern: Regex<(Substring, Substring, Substring)>) -> (Double, Double)? {
        guard let match = output.firstMatch(of: pattern), let a = Double(match.1), let b = Double(match.2) else {
            return nil
        }
        return (a, b)
    }

    /// The examples use the library as an app would: `import Tandem` and the platform, nothing of the package's own.
    @Test func examplesImportOnlyTheLibrary() throws {
        let examples = DocumentationTests.root.appendingPathComponent("Examples")
        let names = try FileManager.default.contentsOfDirectory(atPath: examples.path).sorted()
        #expect(names == ["CustomEngine", "MessagesAndJournal", "WatchTogether"])
        for name in names {
            let source = try String(contentsOf: examples.appendingPathComponent("\(name)/main.swift"), encoding: .utf8)
            let imports = Set(source.matches(of: /(?m)^\s*(?:@\w+\s+)?import\s+(\w+)/).map { String($0.1) })
            #expect(imports.contains("Tandem"), "\(name) does not import Tandem")
            #expect(imports.isSubset(of: ["Tandem", "Foundation", "Synchronization", "Dispatch"]),
                    "\(name) imports \(imports.sorted())")
        }
    }

    @Test func watchTogetherDemoPlaysBothPlayersInStep() async throws {
        let output = try await Self.run("WatchTogether", ["demo", TandemBinary.sample("countdown.webm")])
        #expect(output.contains("bob: joining countdown.webm with ann"), "\(output)")
        let (ann, bob) = try #require(Self.pair(in: output, /ann at ([0-9.]+) s, bob at ([0-9.]+) s/), "\(output)")
        #expect(bob >= 2 && ann >= 2, "both play: \(output)")
        #expect(abs(ann - bob) < 0.05, "in step: ann at \(ann), bob at \(bob)")
        #expect(output.contains("bob: ann ended the session"), "the end reaches bob: \(output)")
    }

    @Test func watchTogetherHostAndGuestAsProcesses() async throws {
        let sample = TandemBinary.sample("countdown.webm")
        let host = try TandemProcess(["host", sample], executable: Self.example("WatchTogether"))
        defer { host.stop() }
        var invite: String?
        await host.wait(for: 20) { process in
            invite = process.stdout.firstMatch(of: /invite: (tandem:\S+)/).map { String($0.1) }
            return invite != nil
        }
        let line = try #require(invite, "no invite: \(host.stdout)\n\(host.stderr)")
        let guest = try TandemProcess(["join", sample], executable: Self.example("WatchTogether"))
        defer { guest.stop() }
        guest.send(line)   // the invite on standard input, not on the command line
        let playing = await guest.wait(for: 30) { process in
            process.stdout.matches(of: /guest: ([0-9.]+) s, playing/).contains { Double($0.1) ?? 0 >= 1 }
        }
        #expect(playing, "the guest plays: \(guest.stdout)\n\(guest.stderr)")
        #expect(guest.stdout.contains("guest: joining countdown.webm with host"), "\(guest.stdout)")
        host.closeInput()   // Enter, or the end of input, ends the session for everyone
        #expect(await host.exitCode(within: 15) == 0, "\(host.stdout)\n\(host.stderr)")
        #expect(await guest.exitCode(within: 15) == 0, "\(guest.stdout)\n\(guest.stderr)")
        #expect(guest.stdout.contains("guest: host ended the session"), "\(guest.stdout)")
    }

    @Test func customEngineFollowsTheGroup() async throws {
        let output = try await Self.run("CustomEngine")
        // Each engine prints the half second it renders: from the start, then from where bob sought (30 s).
        for name in ["ann", "bob"] {
            let start = output.firstRange(of: try Regex("\(name) renders [01]\\.[05] s"))
            let afterSeek = output.firstRange(of: try Regex("\(name) renders 3[01]\\.[05] s"))
            #expect(start != nil && afterSeek != nil, "\(name) misses the start or the seek: \(output)")
            if let start, let afterSeek { #expect(start.lowerBound < afterSeek.lowerBound, "\(output)") }
        }
        let (ann, bob) = try #require(Self.pair(in: output, /paused: ann at ([0-9.]+) s, bob at ([0-9.]+) s/), "\(output)")
        #expect(ann >= 31.2 && ann < 40, "ann paused after the seek: \(output)")
        #expect(output.contains("refused: "), "a rate beyond the session's limits is refused: \(output)")
        #expect(abs(ann - bob) < 0.001, "bob stops where ann paused: ann at \(ann), bob at \(bob)")
    }

    @Test func messagesAndJournalDeliverAndRefuse() async throws {
        let output = try await Self.run("MessagesAndJournal")
        for line in ["bob loaded a sketch: floor plan, 42 strokes", "bob loaded 14 bytes", "ann got 👍 from bob",
                     "bob was refused: ", "bob: ann ended the session"] {
            #expect(output.contains(line), "\(line) missing: \(output)")
        }
    }
}
