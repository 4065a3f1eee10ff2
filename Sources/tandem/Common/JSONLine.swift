import Foundation

/// A JSON value for `--json` event lines: built from literals, encoded with sorted keys on one line.
enum JSONValue: Encodable, Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral,
    ExpressibleByNilLiteral {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])
    case null

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(floatLiteral value: Double) { self = .double(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(uniqueKeysWithValues: elements)) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(nilLiteral: ()) { self = .null }

    /// A string, or null.
    static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    /// Nanoseconds as seconds (item times), or null.
    static func seconds(_ ns: Int64?) -> JSONValue { ns.map { .double((Double($0) / 1e6).rounded() / 1e3) } ?? .null }
    /// Nanoseconds as milliseconds with microsecond resolution (errors, offsets, round trips), or null.
    static func milliseconds(_ ns: Int64?) -> JSONValue { ns.map { .double((Double($0) / 1e3).rounded() / 1e3) } ?? .null }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let v): try container.encode(v)
        case .int(let v): try container.encode(v)
        case .double(let v): v.isFinite ? try container.encode(v) : try container.encodeNil()
        case .bool(let v): try container.encode(v)
        case .array(let v): try container.encode(v)
        case .object(let v): try container.encode(v)
        case .null: try container.encodeNil()
        }
    }

    /// The value as one line of JSON.
    var line: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
