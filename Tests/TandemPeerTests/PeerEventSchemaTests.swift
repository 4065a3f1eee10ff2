import Foundation
import Tandem
import Testing
import TandemPeer

/// The `--json` event types against docs/SCRIPTING.md's table of events and fields, so that neither can drift.
@Suite("JSON events")
struct PeerEventSchemaTests {
    /// One of each event with every optional field set (three participants show every readiness).
    static let examples: [any PeerEvent] = [
        InviteEvent(invite: "tandem://10.0.0.2:7420/s#secret"),
        BrowserEvent(link: "http://10.0.0.2:7420/join/s#secret", loopbackLink: "http://127.0.0.1:7420/join/s#secret"),
        ReachabilityEvent(.mapped(address: "203.0.113.7", port: 7420, method: .upnp)),
        SyncplayJoinEvent(host: "10.0.0.2", port: 8999, room: "s", password: "3a9964f585d77d47f58159ca"),
        JoinedEvent(session: "s", participant: .init(id: "p1", name: "ann"),
                    activity: .init(title: "Film", subtitle: "cut", type: "watchTogether",
                                    fallbackURL: "https://example.com/film.webm", fileName: "film.webm", duration: 90)),
        ActivityEvent(title: "Film", subtitle: "cut", type: "watchTogether", fallbackURL: "https://example.com/film.webm",
                      itemID: "abc", activityIdentifier: "org.tandem.media", previewImageBytes: 0),
        PreviewEvent(path: "/tmp/tandem-preview-s.png", format: "png", bytes: 1024),
        TimelineEvent(generation: 3, state: "waiting", rate: 1, anchorItemTime: 1.5, anchorSessionTime: 42,
                      originator: "p1", waitingFor: ["p2": ["loading"]]),
        ParticipantsEvent(participants: [
            .init(id: "p2", name: "bob", host: false, readiness: .loading(progress: 0.5), suspensions: ["loading"],
                  oneWayDelayMs: 1.25),
            .init(id: "p3", name: "carol", host: false, readiness: .ready(duration: 90), suspensions: [], oneWayDelayMs: 0,
                  renderOffsetMs: -2.5),
            .init(id: "p4", name: "dave", host: false, readiness: .failed(reason: "no such file"), suspensions: [],
                  oneWayDelayMs: 0),
            .init(id: "p5", name: "erin", host: false, readiness: .ready(duration: 90), suspensions: [], oneWayDelayMs: 0,
                  via: "syncplay"),
        ]),
        NoticeEvent(kind: "joined", participant: "p2", text: "bob joined"),
        ChatEvent(participant: "p2", name: "bob", text: "back in five"),
        TrackProposalEvent(participant: "p1", name: "ann", kind: "audio", track: 2, language: "fra", applied: true,
                           playing: 1, text: "ann proposes audio track 2 (fra) — your file has it as track 1: playing that"),
        SuspensionEvent(reasons: ["loading"]),
        WarningEvent(text: "careful"),
        ResyncEvent(driftMs: 12.5),
        ReconnectingEvent(reason: "the link was lost"),
        ReconnectedEvent(afterMs: 1200, participant: "p1"),
        {
            var position = PositionEvent(state: "playing", position: 10, expected: 10.001, positionErrorMs: -1, rate: 1,
                                         generation: 3, clockOffsetMs: 0.5, errorBoundMs: 0.1, roundTripMs: 0.3)
            position.streaming = .init(from: "ann", bufferedSeconds: 12.3)
            return position
        }(),
        LeftEvent(reason: "you left the session"),
        EndedEvent(code: "hostLeft", reason: "the host left"),
        QueueEvent(items: [.init(id: "q1", title: "Film", itemID: "abc", fileName: "film.webm", contentID: "abc",
                                 fallbackURL: "https://example.com/film.webm")], currentIndex: 0),
        ItemEvent(id: "q2", index: 2, count: 3, title: "Short", itemID: "def"),
    ]

    /// Field names, with the names inside each object (or array of objects) field.
    struct Fields: Equatable, CustomStringConvertible {
        var names: [String: Fields?] = [:]
        /// Adds `other`'s names, and theirs inside, to these.
        mutating func merge(_ other: Fields) {
            for (key, nested) in other.names {
                switch (names[key], nested) {
                case (.some(.some(var mine)), .some(let theirs)):
                    mine.merge(theirs)
                    names[key] = mine
                case (.some(.some), nil), (.some(nil), nil):
                    break
                default:
                    names[key] = nested
                }
            }
        }

        var description: String {
            names.keys.sorted().map { key in names[key]!.map { "\(key) {\($0)}" } ?? key }.joined(separator: ", ")
        }
    }

    static func fields(of value: Any) -> Fields? {
        if let object = value as? [String: Any] {
            var fields = Fields()
            for (key, child) in object { fields.names[key] = Self.fields(of: child) }
            return fields
        }
        if let array = value as? [Any] {
            let elements = array.compactMap { Self.fields(of: $0) }
            guard !elements.isEmpty else { return nil }
            return elements.reduce(into: Fields()) { union, next in union.merge(next) }
        }
        return nil
    }

    /// docs/SCRIPTING.md's table: event name → its fields as documented.
    static func documented() throws -> [String: Fields] {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/SCRIPTING.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        guard let start = text.range(of: "## Scripted use and `--json`") else { return [:] }
        var events: [String: Fields] = [:]
        for line in text[start.upperBound...].split(separator: "\n").drop(while: { !$0.hasPrefix("| event") }).dropFirst(2) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            events[name] = parseFields(cells[3])
        }
        return events
    }

    /// `a`, `b (values)`, `c {x, y}`, `d [{x, y}]` → names, nested where braces say so.
    static func parseFields(_ cell: String) -> Fields {
        var text = cell.replacingOccurrences(of: "`", with: "")
        while let range = text.range(of: #"\([^()]*\)"#, options: .regularExpression) { text.removeSubrange(range) }
        var fields = Fields()
        for piece in splitTopLevel(text) {
            guard let name = piece.firstMatch(of: /^\s*([A-Za-z]+)/)?.1 else { continue }
            var nested: Fields?
            if let open = piece.firstIndex(of: "{"), let close = piece.lastIndex(of: "}") {
                nested = parseFields(String(piece[piece.index(after: open)..<close]))
            }
            fields.names[String(name)] = nested
        }
        return fields
    }

    static func splitTopLevel(_ text: String) -> [String] {
        var pieces: [String] = [], current = "", depth = 0
        for character in text {
            if "{[".contains(character) { depth += 1 }
            if "}]".contains(character) { depth -= 1 }
            if character == ",", depth == 0 {
                pieces.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        return pieces + [current]
    }

    @Test("docs/SCRIPTING.md documents every event type, and only those")
    func eventNames() throws {
        let documented = try Self.documented()
        #expect(Set(documented.keys) == Set(allPeerEventTypes.map { $0.name }))
        #expect(Set(Self.examples.map { type(of: $0).name }) == Set(allPeerEventTypes.map { $0.name }))
    }

    @Test("each event's fields, and the fields of its objects, are docs/SCRIPTING.md's")
    func eventFields() throws {
        let documented = try Self.documented()
        for example in Self.examples {
            let name = type(of: example).name
            let object = try JSONSerialization.jsonObject(with: Data(example.line().utf8)) as? [String: Any] ?? [:]
            #expect(object["event"] as? String == name)
            #expect((object["time"] as? Double) != nil)
            var actual = Self.fields(of: object) ?? Fields()
            actual.names["event"] = nil
            actual.names["time"] = nil
            var expected = try #require(documented[name], "\(name) is not in docs/SCRIPTING.md")
            // `waitingFor` is keyed by participant ids, not by field names.
            if expected.names["waitingFor"] != nil {
                expected.names["waitingFor"] = .some(nil)
                actual.names["waitingFor"] = .some(nil)
            }
            #expect(actual == expected, "\(name): types have \(actual), docs/SCRIPTING.md says \(expected)")
        }
    }

    @Test("a peer's status (typed times) writes its position event in the same units and digits as the numbers did")
    func positionFromTypedStatus() {
        let timeline = Timeline(generation: 4, itemID: "m", rate: 1.5, anchorSessionTime: 0, anchorItemTime: 0,
                                status: .playing, originator: nil)
        var status = PeerStatus(timeline: timeline, position: ItemTime(nanoseconds: 12_345_678_901),
                                expected: ItemTime(nanoseconds: 12_346_912_345), duration: .seconds(40), others: [],
                                clockOffset: TimeSpan(nanoseconds: -1_234_567), errorBound: TimeSpan(nanoseconds: 250_499),
                                roundTrip: TimeSpan(nanoseconds: 3_000_001), renderOffset: TimeSpan(nanoseconds: 1_500_500))
        let line = PositionEvent(status).line(at: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(line == #"{"clockOffsetMs":-1.235,"clockSendStamps":null,"clockStamps":null,"directPaths":null,"errorBoundMs":0.25,"event":"position","expected":12.347,"generation":4,"#
            + #""position":12.346,"positionErrorMs":-1.233,"rate":1.5,"renderOffsetMs":1.501,"roundTripMs":3,"sinkThreads":null,"#
            + #""state":"playing","streaming":null,"time":1700000000,"unreliablePath":null}"#)
        #expect(status.line(names: [:]).hasPrefix("▶ 0:12/0:40 1.5×"))
        status.timeline = nil
        #expect(status.positionError == nil)
    }

    @Test("absent values are written as null, times and units as before")
    func encoding() throws {
        let line = PositionEvent(state: "connecting", position: nil, expected: nil, positionErrorMs: nil, rate: nil,
                                 generation: nil, clockOffsetMs: nil, errorBoundMs: nil, roundTripMs: nil)
            .line(at: Date(timeIntervalSince1970: 1_700_000_000.1234))
        #expect(line == #"{"clockOffsetMs":null,"clockSendStamps":null,"clockStamps":null,"directPaths":null,"errorBoundMs":null,"event":"position","expected":null,"generation":null,"#
            + #""position":null,"positionErrorMs":null,"rate":null,"renderOffsetMs":null,"roundTripMs":null,"sinkThreads":null,"#
            + #""state":"connecting","streaming":null,"time":1700000000.123,"unreliablePath":null}"#)
        #expect(EventUnits.seconds(1_234_567_890) == 1.235)
        #expect(EventUnits.milliseconds(1_234_567) == 1.235)
        let readiness = ParticipantsEvent(participants: [
            .init(id: "p", name: "n", host: true, readiness: .loading(progress: nil), suspensions: [], oneWayDelayMs: 0),
        ]).line(at: Date(timeIntervalSince1970: 0))
        #expect(readiness.contains(#""readiness":{"progress":null,"state":"loading"}"#))
        let timeline = TimelineEvent(generation: 1, state: "paused", rate: 1, anchorItemTime: 0, anchorSessionTime: 0,
                                     originator: nil, waitingFor: nil).line()
        #expect(!timeline.contains("waitingFor") && timeline.contains(#""originator":null"#))
    }

    @Test("events decode back to what was encoded")
    func roundTrip() throws {
        let event = JoinedEvent(session: "s", participant: .init(id: "p", name: "n"), activity: nil)
        let decoded = try JSONDecoder().decode(JoinedEvent.self, from: Data(event.line().utf8))
        #expect(decoded == event)
    }
}
