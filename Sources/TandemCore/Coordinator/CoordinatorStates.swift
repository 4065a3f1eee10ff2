/// Whether the engine is rendering or stalled (network or decoder), and the suspension a stall holds open.
enum StallState: Hashable, Sendable {
    case flowing
    case stalled(suspension: UInt64)
}

/// A local pause holds playback back while its generation is on its way from the authority.
enum LocalPauseHold: Hashable, Sendable {
    case none
    /// Timeline request `request` asked the group to pause; held until its generation arrives, it is rejected,
    /// or local time `until`.
    case holding(request: UInt64, until: LocalInstant)

    var request: UInt64? {
        if case .holding(let request, _) = self { return request } else { return nil }
    }

    func holds(at now: LocalInstant) -> Bool {
        if case .holding(_, let until) = self { return now < until } else { return false }
    }
}

/// The drift watchdog: whether the engine has been off the timeline, and since when (local time).
enum DriftWatch: Hashable, Sendable {
    case steady
    case drifting(since: LocalInstant)
}

/// The item the engine holds. It stays loaded while another one loads, and when that one fails.
enum LoadedItem: Hashable, Sendable {
    case none
    case loaded(itemID: String, info: MediaInfo)

    var itemID: String? {
        if case .loaded(let itemID, _) = self { return itemID } else { return nil }
    }

    var info: MediaInfo? {
        if case .loaded(_, let info) = self { return info } else { return nil }
    }
}

/// A load in flight, or the item the engine could not load. A failed item is not asked for again until some
/// item has loaded since.
enum ItemLoad: Hashable, Sendable {
    case none
    /// Load `command` fetches `item`; only its outcome counts (an earlier load's is ignored). The `.loading`
    /// suspension `suspension` stays open until it ends; a load that replaces another keeps it. `failed` is an
    /// item that could not be loaded before this load began, still not to be asked for again.
    case loading(item: String, command: UInt64, suspension: UInt64, failed: String?)
    /// `item` could not be loaded.
    case failed(item: String)

    /// The item being loaded.
    var item: String? {
        if case .loading(let item, _, _, _) = self { return item } else { return nil }
    }

    /// The item not to ask for again.
    var failedItem: String? {
        switch self {
        case .none: return nil
        case .loading(_, _, _, let failed): return failed
        case .failed(let item): return item
        }
    }
}

/// How far the engine got with the latest prepare: ready to start at an item time and rate is what lets a start
/// skip its own preroll, and what a paused or waiting generation is acknowledged with.
enum Preroll: Hashable, Sendable {
    case none
    /// Prepare `command`, the latest command, is on its way; its outcome makes the engine `prepared`.
    case preparing(command: UInt64, itemTime: ItemTime, rate: Double)
    /// The engine said it stands prerolled at `itemTime`, ready for `rate`, in answer to what was then the
    /// latest command (a prepare, or a load, which leaves the engine at zero for rate 1). Any later command, a
    /// missed start, the end of a stall and a resync end it.
    case prepared(itemTime: ItemTime, rate: Double)

    func isPrepared(at itemTime: ItemTime) -> Bool {
        if case .prepared(let x, _) = self { return x == itemTime } else { return false }
    }
}

/// The latest start (`play` command) the engine was given and how it went. Later prepares and pauses leave it
/// alone: a start's outcome still counts after them.
enum StartState: Hashable, Sendable {
    case none
    /// Play `command` has not reported yet.
    case starting(command: UInt64)
    /// The engine reported rendering at local time `at` (the drift watchdog lets a fresh start settle).
    case started(at: LocalInstant)
}

/// After a stall while the group waits: the engine prerolls at the group's stop (prepare `command`), and the
/// stall suspension `suspension` stays open until it has, so the group restarts on `generation`'s acknowledgement.
enum StallRecovery: Hashable, Sendable {
    case none
    case prerolling(command: UInt64, suspension: UInt64, generation: UInt64)

    var command: UInt64? {
        if case .prerolling(let command, _, _) = self { return command } else { return nil }
    }
}
