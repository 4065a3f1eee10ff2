import Foundation
import Tandem

// The `--json` events, one type each, in the order docs/SCRIPTING.md's table lists them.

/// `invite` (host only, first): the invite to hand on.
package struct InviteEvent: PeerEvent, Equatable {
    package static let name = "invite"
    package var invite: String
    package init(invite: String) { self.invite = invite }
}

/// `browser` (host with `--web`, after `invite`): the browser link, and the same on loopback when the link is plain
/// http to another address (browsers give such pages WebCrypto only on loopback).
package struct BrowserEvent: PeerEvent, Equatable {
    package static let name = "browser"
    package var link: String
    @Nullable package var loopbackLink: String?
    package init(link: String, loopbackLink: String?) {
        self.link = link
        self.loopbackLink = loopbackLink
    }

    package init(invite: Invite) {
        let links = WebPage.links(for: invite)
        self.init(link: links.link, loopbackLink: links.loopback)
    }
}

/// `joined`: this peer is in the session.
package struct JoinedEvent: PeerEvent, Equatable {
    package static let name = "joined"
    package var session: String
    package var participant: ParticipantInfo
    @Nullable package var activity: ActivityInfo?

    package struct ParticipantInfo: Codable, Sendable, Equatable {
        package var id: String
        package var name: String
        package init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// The shared media as the host described it.
    package struct ActivityInfo: Codable, Sendable, Equatable {
        @Nullable package var title: String?
        @Nullable package var subtitle: String?
        package var type: String
        @Nullable package var fallbackURL: String?
        package var fileName: String
        /// Seconds.
        @Nullable package var duration: Double?

        package init(title: String?, subtitle: String?, type: String, fallbackURL: String?, fileName: String,
                     duration: Double?) {
            self.title = title
            self.subtitle = subtitle
            self.type = type
            self.fallbackURL = fallbackURL
            self.fileName = fileName
            self.duration = duration
        }

        package init(_ activity: MediaActivity) {
            self.init(title: activity.metadata.title, subtitle: activity.metadata.subtitle,
                      type: activity.metadata.type.rawValue, fallbackURL: activity.metadata.fallbackURL?.absoluteString,
                      fileName: activity.fileName, duration: EventUnits.seconds(activity.duration?.nanoseconds))
        }
    }

    package init(session: String, participant: ParticipantInfo, activity: ActivityInfo?) {
        self.session = session
        self.participant = participant
        self.activity = activity
    }
}

/// `activity`: the activity was set or changed, with all of its metadata.
package struct ActivityEvent: PeerEvent, Equatable {
    package static let name = "activity"
    @Nullable package var title: String?
    @Nullable package var subtitle: String?
    package var type: String
    @Nullable package var fallbackURL: String?
    package var itemID: String
    package var activityIdentifier: String
    /// Bytes of the preview image carried in the metadata itself (0 when none; `--preview` travels in the
    /// journal and is announced by a `preview` event).
    package var previewImageBytes: Int

    package init(title: String?, subtitle: String?, type: String, fallbackURL: String?, itemID: String,
                 activityIdentifier: String, previewImageBytes: Int) {
        self.title = title
        self.subtitle = subtitle
        self.type = type
        self.fallbackURL = fallbackURL
        self.itemID = itemID
        self.activityIdentifier = activityIdentifier
        self.previewImageBytes = previewImageBytes
    }

    package init(_ envelope: ActivityEnvelope) {
        let metadata = envelope.metadata
        self.init(title: metadata.title, subtitle: metadata.subtitle, type: metadata.type.rawValue,
                  fallbackURL: metadata.fallbackURL?.absoluteString, itemID: envelope.itemID,
                  activityIdentifier: envelope.activityIdentifier, previewImageBytes: metadata.previewImage?.count ?? 0)
    }
}

/// `preview`: the host's preview image arrived and was saved.
package struct PreviewEvent: PeerEvent, Equatable {
    package static let name = "preview"
    package var path: String
    /// `png`, `jpeg`, `gif` or `webp`.
    package var format: String
    package var bytes: Int
    package init(path: String, format: String, bytes: Int) {
        self.path = path
        self.format = format
        self.bytes = bytes
    }
}

/// `timeline`: a new timeline generation.
package struct TimelineEvent: PeerEvent, Equatable {
    package static let name = "timeline"
    package var generation: UInt64
    /// `playing`, `paused` or `waiting`.
    package var state: String
    package var rate: Double
    /// Seconds of item time.
    package var anchorItemTime: Double
    /// Nanoseconds of session time.
    package var anchorSessionTime: Int64
    @Nullable package var originator: String?
    /// Who is waited for and why; only while waiting.
    package var waitingFor: [String: [String]]?

    package init(generation: UInt64, state: String, rate: Double, anchorItemTime: Double, anchorSessionTime: Int64,
                 originator: String?, waitingFor: [String: [String]]?) {
        self.generation = generation
        self.state = state
        self.rate = rate
        self.anchorItemTime = anchorItemTime
        self.anchorSessionTime = anchorSessionTime
        self.originator = originator
        self.waitingFor = waitingFor
    }

    package init(_ timeline: Timeline) {
        var waiting: [String: [String]]?
        if case .waiting(let who) = timeline.status {
            waiting = Dictionary(uniqueKeysWithValues: who.map { ($0.key.rawValue, $0.value.map(\.rawValue)) })
        }
        self.init(generation: timeline.generation, state: PeerStatus.stateName(timeline), rate: timeline.rate,
                  anchorItemTime: EventUnits.seconds(timeline.anchorItemTime.nanoseconds),
                  anchorSessionTime: timeline.anchorSessionTime.nanoseconds, originator: timeline.originator?.rawValue,
                  waitingFor: waiting)
    }
}

/// `participants`: the others changed.
package struct ParticipantsEvent: PeerEvent, Equatable {
    package static let name = "participants"
    package var participants: [Participant]

    package struct Participant: Codable, Sendable, Equatable {
        package var id: String
        package var name: String
        package var host: Bool
        package var readiness: Readiness
        package var suspensions: [String]
        package var oneWayDelayMs: Double
        /// `syncplay` for a Syncplay client (followed at Syncplay's precision); absent for Tandem peers.
        package var via: String?
        /// How far its picture is from the group's line as it measures it (positive: ahead); browser pages report
        /// it, `null` for peers that do not.
        @Nullable package var renderOffsetMs: Double?

        package init(id: String, name: String, host: Bool, readiness: Readiness, suspensions: [String],
                     oneWayDelayMs: Double, via: String? = nil, renderOffsetMs: Double? = nil) {
            self.renderOffsetMs = renderOffsetMs
            self.id = id
            self.name = name
            self.host = host
            self.readiness = readiness
            self.suspensions = suspensions
            self.oneWayDelayMs = oneWayDelayMs
            self.via = via
        }

        package init(_ state: ParticipantState) {
            self.init(id: state.participant.id.rawValue, name: state.participant.name, host: state.isHost,
                      readiness: Readiness(state.readiness), suspensions: state.suspensions.map(\.rawValue),
                      oneWayDelayMs: EventUnits.milliseconds(state.oneWayDelay.nanoseconds), via: state.participant.via,
                      renderOffsetMs: EventUnits.milliseconds(state.renderOffset?.nanoseconds))
        }
    }

    /// `{state, progress}` while loading, `{state, duration}` when ready, `{state, reason}` when failed.
    package enum Readiness: Codable, Sendable, Equatable {
        case loading(progress: Double?)
        /// Seconds.
        case ready(duration: Double?)
        case failed(reason: String)
        case unknown

        enum CodingKeys: String, CodingKey { case state, progress, duration, reason }

        package init(_ readiness: TandemCore.Readiness) {
            switch readiness {
            case .loading(let progress): self = .loading(progress: progress)
            case .ready(let info): self = .ready(duration: EventUnits.seconds(info.duration?.nanoseconds))
            case .failed(let why): self = .failed(reason: why)
            case .unknown: self = .unknown
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .loading(let progress):
                try container.encode("loading", forKey: .state)
                try container.encode(progress, forKey: .progress)
            case .ready(let duration):
                try container.encode("ready", forKey: .state)
                try container.encode(duration, forKey: .duration)
            case .failed(let reason):
                try container.encode("failed", forKey: .state)
                try container.encode(reason, forKey: .reason)
            case .unknown:
                try container.encode("unknown", forKey: .state)
            }
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            switch try container.decode(String.self, forKey: .state) {
            case "loading": self = .loading(progress: try container.decodeIfPresent(Double.self, forKey: .progress))
            case "ready": self = .ready(duration: try container.decodeIfPresent(Double.self, forKey: .duration))
            case "failed": self = .failed(reason: try container.decode(String.self, forKey: .reason))
            default: self = .unknown
            }
        }
    }

    package init(participants: [Participant]) { self.participants = participants }
    package init(_ others: [ParticipantState]) { self.init(participants: others.map(Participant.init)) }
}

/// `notice`: something worth showing.
package struct NoticeEvent: PeerEvent, Equatable {
    package static let name = "notice"
    package var kind: String
    @Nullable package var participant: String?
    package var text: String

    package init(kind: String, participant: String?, text: String) {
        self.kind = kind
        self.participant = participant
        self.text = text
    }

    package init(_ notice: Notice) {
        self.init(kind: notice.kind.rawValue, participant: notice.participant?.rawValue, text: notice.text)
    }
}

/// `chat`: a chat line, from someone else or from this participant.
package struct ChatEvent: PeerEvent, Equatable {
    package static let name = "chat"
    package var participant: String
    package var name: String
    package var text: String

    package init(participant: String, name: String, text: String) {
        self.participant = participant
        self.name = name
        self.text = text
    }
}

/// `trackProposal`: the host proposed an audio or subtitle track (`host --share-tracks`), and what this joiner did.
package struct TrackProposalEvent: PeerEvent, Equatable {
    package static let name = "trackProposal"
    package var participant: String
    package var name: String
    /// `audio` or `subtitle`.
    package var kind: String
    /// The host's track, from 1; null: subtitles off.
    @Nullable package var track: Int?
    @Nullable package var language: String?
    /// Whether this joiner's player now plays what was proposed.
    package var applied: Bool
    /// The track of that kind this joiner plays now, from 1; null when none (subtitles off).
    @Nullable package var playing: Int?
    package var text: String

    package init(participant: String, name: String, kind: String, track: Int?, language: String?, applied: Bool,
                 playing: Int?, text: String) {
        self.participant = participant
        self.name = name
        self.kind = kind
        self.track = track
        self.language = language
        self.applied = applied
        self.playing = playing
        self.text = text
    }
}

/// `suspension`: this peer's own suspensions changed.
package struct SuspensionEvent: PeerEvent, Equatable {
    package static let name = "suspension"
    package var reasons: [String]
    package init(reasons: [String]) { self.reasons = reasons }
}

/// `warning`: a bad command, a rejected request, different media, a playback problem.
package struct WarningEvent: PeerEvent, Equatable {
    package static let name = "warning"
    package var text: String
    package init(text: String) { self.text = text }
}

/// `resync`: the drift watchdog resynchronised this player.
package struct ResyncEvent: PeerEvent, Equatable {
    package static let name = "resync"
    package var driftMs: Double
    package init(driftMs: Double) { self.driftMs = driftMs }
}

/// `reconnecting`: the link was lost; the peer tries to reconnect.
package struct ReconnectingEvent: PeerEvent, Equatable {
    package static let name = "reconnecting"
    package var reason: String
    package init(reason: String) { self.reason = reason }
}

/// `reconnected`: the peer is back as the same participant.
package struct ReconnectedEvent: PeerEvent, Equatable {
    package static let name = "reconnected"
    /// Since it last heard from the server.
    package var afterMs: Double
    package var participant: String
    package init(afterMs: Double, participant: String) {
        self.afterMs = afterMs
        self.participant = participant
    }
}

/// `left`: this peer left, or ended the session for everyone (last).
package struct LeftEvent: PeerEvent, Equatable {
    package static let name = "left"
    package var reason: String
    package init(reason: String) { self.reason = reason }
}

/// `ended`: the session ended for this peer for another reason (last).
package struct EndedEvent: PeerEvent, Equatable {
    package static let name = "ended"
    /// `ended`, `hostLeft`, `serverShutdown`, `connectionLost`, …
    package var code: String
    package var reason: String
    package init(code: String, reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// Every event type, for checks of the documented schema.
package let allPeerEventTypes: [any PeerEvent.Type] = [
    InviteEvent.self, BrowserEvent.self, ReachabilityEvent.self, SyncplayJoinEvent.self, JoinedEvent.self, ActivityEvent.self, PreviewEvent.self, TimelineEvent.self, ParticipantsEvent.self,
    NoticeEvent.self, ChatEvent.self, TrackProposalEvent.self, SuspensionEvent.self, WarningEvent.self, ResyncEvent.self, ReconnectingEvent.self,
    ReconnectedEvent.self, PositionEvent.self, LeftEvent.self, EndedEvent.self, QueueEvent.self, ItemEvent.self,
]

/// `reachability` (host, after `invite`): how people outside this machine's network reach the session — the
/// header's `reachable from the internet at …` or `not reachable from outside: …` line.
package struct ReachabilityEvent: PeerEvent, Equatable {
    package static let name = "reachability"
    /// Whether someone on the internet can join.
    package var reachable: Bool
    /// How: `upnp-igd`, `nat-pmp`, `ipv6`, `public-address`, `relay`, `loopback`, or `none`.
    package var via: String
    /// The address and port the invite names.
    package var address: String
    package var port: Int
    package var text: String

    package init(_ reachability: Reachability) {
        reachable = reachability.isReachableFromOutside
        via = reachability.way
        address = reachability.address
        port = reachability.port
        text = reachability.text
    }
}
