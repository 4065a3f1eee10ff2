import Foundation
import Testing

/// The README stays something a newcomer reads in ten minutes, no link in the documentation leads nowhere (every
/// relative link in README.md, CHANGELOG.md and docs/*.md names a file that exists, and a `#anchor` into a Markdown
/// file names one of its headings, as GitHub makes them), and its Swift is the examples', which the build compiles.
@Suite struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// README.md, CHANGELOG.md and every docs/*.md, as paths from the repository's root.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        return ["README.md", "CHANGELOG.md"] + docs
    }

    @Test func theReadmeStaysShort() throws {
        let lines = try Self.read("README.md").split(separator: "\n", omittingEmptySubsequences: false)
        // A file ending in a newline splits into one empty piece more than it has lines.
        let count = lines.last == "" ? lines.count - 1 : lines.count
        #expect(count <= 400, "README.md has \(count) lines; keep it to 400 and move the detail to docs/")
    }

    @Test func everyRelativeLinkLeadsSomewhere() throws {
        var broken: [String] = []
        var checked = 0
        var anchorsOf: [String: [String]] = [:]
        for document in try Self.documents() {
            let directory = (document as NSString).deletingLastPathComponent
            for (number, line) in Self.prose(of: try Self.read(document)) {
                for target in Self.linkTargets(in: line) where target.firstMatch(of: /^[a-zA-Z][a-zA-Z+.-]*:/) == nil {
                    checked += 1
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                    let path = String(parts[0]), anchor = parts.count > 1 ? String(parts[1]) : nil
                    let file = path.isEmpty ? document
                        : ((directory as NSString).appendingPathComponent(path) as NSString).standardizingPath
                    guard FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(file).path) else {
                        broken.append("\(document):\(number): \(target) (no file \(file))")
                        continue
                    }
                    guard let anchor, file.hasSuffix(".md") else { continue }
                    if anchorsOf[file] == nil { anchorsOf[file] = Self.anchors(of: try Self.read(file)) }
                    if anchorsOf[file]?.contains(anchor) != true {
                        broken.append("\(document):\(number): \(target) (no heading #\(anchor) in \(file))")
                    }
                }
            }
        }
        #expect(checked > 100, "only \(checked) links found: is the link pattern still right?")
        #expect(broken.isEmpty, "broken links:\n\(broken.joined(separator: "\n"))")
    }

    @Test func anchorsAreGitHubs() {
        #expect(Self.slug("Peers as processes, and across the network lab (`tandem bench sync --processes`, `--netlab`)")
                == "peers-as-processes-and-across-the-network-lab-tandem-bench-sync---processes---netlab")
        #expect(Self.slug("Limits, and what to look at next") == "limits-and-what-to-look-at-next")
        #expect(Self.slug("[0.11.0] - 2026-11-23") == "0110---2026-11-23")
        #expect(Self.anchors(of: "# A\n```\n# not a heading\n```\n## A\n") == ["a", "a-1"])
        #expect(Self.linkTargets(in: "see [x](a.md#b) and ![p](docs/p.svg), not `[c](d)`") == ["a.md#b", "docs/p.svg"])
    }

    /// The Swift in the documentation is the examples' own, which the build compiles and ExampleProcessTests run:
    /// every ```swift block in README.md, CHANGELOG.md, docs/*.md and the DocC catalog follows a line
    /// `<!-- snippet: FILE#NAME -->` and is, line for line, the region of FILE between `// snippet: NAME` and
    /// `// snippet end` (indented as the block's fence is). `python3 scripts/snippets.py` copies them again.
    @Test func swiftInTheDocumentationIsTheExamples() throws {
        let catalog = "Sources/Tandem/Tandem.docc"
        let articles = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent(catalog).path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        var problems: [String] = []
        var quoted = 0
        for document in try Self.documents() + articles {
            let lines = try Self.read(document).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var index = 0
            while index < lines.count {
                let fence = index
                index += 1
                guard lines[fence].trimmingCharacters(in: .whitespaces).hasPrefix("```swift") else { continue }
                let indent = String(lines[fence].prefix { $0 == " " })
                var block: [String] = []
                while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                    block.append(lines[index].hasPrefix(indent) ? String(lines[index].dropFirst(indent.count)) : lines[index])
                    index += 1
                }
                let before = lines[..<fence].last { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? ""
                guard let marker = before.firstMatch(of: /^\s*<!-- snippet: ([^#\s]+)#([\w-]+) -->$/) else {
                    problems.append("\(document):\(fence + 1): a Swift block with no `<!-- snippet: FILE#NAME -->` line before it")
                    continue
                }
                quoted += 1
                let (file, name) = (String(marker.1), String(marker.2))
                guard let region = try Self.region(name, of: file) else {
                    problems.append("\(document):\(fence + 1): no region `// snippet: \(name)` … `// snippet end` in \(file)")
                    continue
                }
                if region != block {
                    problems.append("\(document):\(fence + 1): not \(file)#\(name) as it is now (python3 scripts/snippets.py copies it)")
                }
            }
        }
        #expect(quoted >= 8, "only \(quoted) quoted blocks found: is the marker pattern still right?")
        #expect(problems.isEmpty, "\n\(problems.joined(separator: "\n"))")
    }

    @Test func regionsAreCutAsTheScriptCutsThem() throws {
        let lines = try #require(try Self.region("viewer", of: "Examples/WatchTogether/main.swift"))
        #expect(lines.first?.hasPrefix("/// One participant") == true)
        #expect(!lines.contains { $0.contains("snippet") })
    }

    /// The lines of FILE between `// snippet: NAME` and `// snippet end`, less the indentation they all share.
    static func region(_ name: String, of file: String) throws -> [String]? {
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent(file).path) else { return nil }
        let lines = try read(file).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// snippet: \(name)" }),
              let end = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// snippet end" })
        else { return nil }
        let body = lines[(start + 1)..<end]
        let shared = body.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return body.map { String($0.dropFirst(min(shared, $0.prefix { $0 == " " }.count))) }
    }

    /// Lines outside fenced code blocks, numbered from 1.
    static func prose(of text: String) -> [(Int, String)] {
        var inFence = false
        var result: [(Int, String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") {
                inFence.toggle()
                continue
            }
            if !inFence { result.append((index + 1, String(line))) }
        }
        return result
    }

    /// The targets of `[text](target)` and `![alt](target)` on a line, leaving out code spans.
    static func linkTargets(in line: String) -> [String] {
        let prose = line.replacing(/`[^`]*`/, with: "")
        return prose.matches(of: /\]\(([^)\s]+)\)/).map { String($0.1) }
    }

    /// The anchors GitHub gives a Markdown file's headings: the text as shown, lower-cased, without punctuation
    /// but `-` and `_`, spaces as `-`; a repeated one gets `-1`, `-2`, ….
    static func anchors(of text: String) -> [String] {
        var seen: [String: Int] = [:]
        var result: [String] = []
        for (_, line) in prose(of: text) {
            guard let heading = line.firstMatch(of: /^#{1,6} +(.*)$/) else { continue }
            let anchor = slug(String(heading.1))
            let repeats = seen[anchor, default: 0]
            seen[anchor] = repeats + 1
            result.append(repeats == 0 ? anchor : "\(anchor)-\(repeats)")
        }
        return result
    }

    static func slug(_ heading: String) -> String {
        let shown = heading.replacing(/!?\[([^\]]*)\]\([^)]*\)/) { String($0.1) }.replacingOccurrences(of: "`", with: "")
        let kept = shown.trimmingCharacters(in: .whitespaces).lowercased().unicodeScalars.filter { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber,
                 .connectorPunctuation:
                return true
            default:
                return scalar == " " || scalar == "-"
            }
        }
        return String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-")
    }
}
