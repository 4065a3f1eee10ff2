import Foundation
import Tandem

/// One kind of `--json` event (docs/SCRIPTING.md, "Scripted use and `--json`"): its fields, plus `event` (its name) and `time`
/// (Unix seconds, to the millisecond), written as one JSON object per line with sorted keys.
package protocol PeerEvent: Codable, Sendable {
    /// The `event` field.
    static var name: String { get }
}

extension PeerEvent {
    /// The event as one line of JSON, stamped with `date`.
    package func line(at date: Date = Date()) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let stamped = Stamped(event: self, time: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
        return (try? encoder.encode(stamped)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// An event's fields with `event` and `time` beside them in the same object.
private struct Stamped<Event: PeerEvent>: Encodable {
    let event: Event
    let time: Double

    enum CodingKeys: String, CodingKey { case event, time }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Event.name, forKey: .event)
        try container.encode(time, forKey: .time)
    }
}

/// An optional field that is written as `null` rather than left out: the schema promises every field of an event.
@propertyWrapper
package struct Nullable<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// A missing `Nullable` field decodes as nil, like a `null` one.
    package func decode<Value>(_ type: Nullable<Value>.Type, forKey key: Key) throws -> Nullable<Value> {
        try decodeIfPresent(type, forKey: key) ?? Nullable(wrappedValue: nil)
    }
}

/// How events write times: item times in seconds (to the millisecond), small durations in milliseconds (to the
/// microsecond).
package enum EventUnits {
    /// Nanoseconds as seconds, to the millisecond.
    package static func seconds(_ ns: Int64) -> Double { (Double(ns) / 1e6).rounded() / 1e3 }
    package static func seconds(_ ns: Int64?) -> Double? { ns.map(seconds) }
    /// Nanoseconds as milliseconds, to the microsecond.
    package static func milliseconds(_ ns: Int64) -> Double { (Double(ns) / 1e3).rounded() / 1e3 }
    package static func milliseconds(_ ns: Int64?) -> Double? { ns.map(milliseconds) }
    /// A typed time (an item time, a span) as seconds, to the millisecond: the JSON output's unit.
    package static func seconds<T: TimeValue>(_ time: T?) -> Double? { time.map { seconds($0.nanoseconds) } }
    /// A typed span as milliseconds, to the microsecond.
    package static func milliseconds<T: TimeValue>(_ time: T?) -> Double? { time.map { milliseconds($0.nanoseconds) } }
}
