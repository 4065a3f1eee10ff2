import Foundation

/// The kind of thing a group does together. Extensible: `ActivityType(rawValue: "myKind")`.
public struct ActivityType: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public static let generic = ActivityType(rawValue: "generic")
    public static let watchTogether = ActivityType(rawValue: "watchTogether")
    public static let listenTogether = ActivityType(rawValue: "listenTogether")
    public static let createTogether = ActivityType(rawValue: "createTogether")
    public static let workoutTogether = ActivityType(rawValue: "workoutTogether")
    public static let playTogether = ActivityType(rawValue: "playTogether")
    public static let knownTypes: [ActivityType] = [.generic, .watchTogether, .listenTogether, .createTogether,
                                                     .workoutTogether, .playTogether]
    public var description: String { rawValue }
}

/// What others see of an activity before and while they take part.
public struct GroupActivityMetadata: Hashable, Sendable, Codable {
    public var title: String?
    public var subtitle: String?
    /// Where to get the media or app when a participant does not have it.
    public var fallbackURL: URL?
    public var type: ActivityType
    /// An optional small preview image (PNG/JPEG bytes).
    public var previewImage: Data?

    public init(title: String? = nil, subtitle: String? = nil, fallbackURL: URL? = nil,
                type: ActivityType = .generic, previewImage: Data? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.fallbackURL = fallbackURL
        self.type = type
        self.previewImage = previewImage
    }
}

/// Something a group shares, e.g. a movie. Apps define their own, like SharePlay's `GroupActivity`.
public protocol GroupActivity: Codable, Sendable {
    /// Identifies the kind of activity across peers. Defaults to the type's name.
    static var activityIdentifier: String { get }
    var metadata: GroupActivityMetadata { get }
}

extension GroupActivity {
    public static var activityIdentifier: String { String(describing: Self.self) }
}

/// An activity as it travels between peers: identifier, metadata, and the app's own encoding of the value.
public struct ActivityEnvelope: Hashable, Sendable, Codable {
    public var activityIdentifier: String
    public var metadata: GroupActivityMetadata
    /// JSON encoding of the app's activity value.
    public var payload: Data
    /// The item the playback timeline refers to (e.g. the movie's content id or name).
    public var itemID: String

    public init(activityIdentifier: String, metadata: GroupActivityMetadata, payload: Data, itemID: String) {
        self.activityIdentifier = activityIdentifier
        self.metadata = metadata
        self.payload = payload
        self.itemID = itemID
    }
}
