import Foundation
import Testing
@testable import TandemCore

/// Starts are moved later by less than a refresh so that the line's frames fall on the refreshes of the displays
/// peers report (`linkReport.display`, which browser pages send): otherwise a line between two refreshes leaves
/// such a page up to half a refresh from the group however well it follows.
@Suite struct DisplayAlignmentTests {
    static let refresh = TimeSpan(nanoseconds: 16_666_667)
    static let frame = TimeSpan(nanoseconds: 33_333_333)

    /// Alice (host) and a page, both ready on loopback; the page reports `grid` (if any) just before play.
    static func play(grid: DisplayGrid?, configuration: AuthorityConfiguration = AuthorityConfiguration(),
                     rate: Double? = nil, seek: ItemTime? = nil) -> (Timeline, AuthorityHarness) {
        var h = AuthorityHarness(configuration: configuration)
        let a = h.joinReady("alice", host: true)
        let page = h.joinReady("page")
        h.advance(ms: 1_000)
        if let rate { h.request(.rate(rate), from: a) }
        if let seek { h.request(.seek(itemTime: seek, play: false), from: a) }
        h.advance(ms: 500)
        h.send(.prepared(generation: h.authority.timeline.generation), from: a)
        h.send(.prepared(generation: h.authority.timeline.generation), from: page)
        h.send(.linkReport(oneWayDelay: .zero, errorBound: .zero, display: grid), from: page)
        h.request(.play, from: a)
        return (h.authority.timeline, h)
    }

    /// How far `instant` is past the last refresh of `grid` before it.
    static func phase(_ instant: SessionInstant, _ grid: DisplayGrid) -> Int64 {
        let d = (instant - grid.refreshAt).nanoseconds % grid.refresh.nanoseconds
        return d < 0 ? d + grid.refresh.nanoseconds : d
    }

    @Test func aStartIsPutOnTheRefreshesOfAPagesDisplay() {
        let (plain, _) = Self.play(grid: nil)
        #expect(plain.isPlaying)
        // A display whose refreshes fall 5.2 ms after the start that would have been chosen.
        let grid = DisplayGrid(refresh: Self.refresh, refreshAt: plain.anchorSessionTime + .milliseconds(5.2) - Self.refresh * Int64(30))
        let (aligned, _) = Self.play(grid: grid)
        #expect(aligned.isPlaying && aligned.anchorItemTime == plain.anchorItemTime)
        // Moved later by what puts the anchor (the frame there: no frames reported) on a refresh: 5.2 ms.
        #expect(aligned.anchorSessionTime - plain.anchorSessionTime == .milliseconds(5.2))
        #expect(Self.phase(aligned.anchorSessionTime, grid) == 0)
    }

    @Test func theMediasFramesAreWhatLandsOnTheRefreshes() {
        // Frames at 12 ms + k × 33.3 ms of item time; a seek to 60 s (between two frames).
        let (plain, _) = Self.play(grid: nil, seek: .seconds(60))
        let grid = DisplayGrid(refresh: Self.refresh, refreshAt: plain.anchorSessionTime - .milliseconds(100),
                               frame: Self.frame, frameAt: .milliseconds(12))
        let (aligned, _) = Self.play(grid: grid, seek: .seconds(60))
        #expect(aligned.anchorItemTime == .seconds(60))
        let shift = aligned.anchorSessionTime - plain.anchorSessionTime
        #expect(shift >= .zero && shift < Self.refresh)
        // The frame nearest 60 s, and every other frame two refreshes on, falls on a refresh.
        let nearest = ItemTime(nanoseconds: 12_000_000 + 1_800 * Self.frame.nanoseconds)
        for k in Int64(0)..<100 {
            let at = aligned.anchorSessionTime + (nearest + Self.frame * k - aligned.anchorItemTime)
            let p = Self.phase(at, grid)
            #expect(min(p, Self.refresh.nanoseconds - p) <= 1_000, "frame \(k) is \(p) ns past a refresh")
        }
    }

    @Test func atARateWhereFramesDoNotComeAWholeNumberOfRefreshesApartNothingMoves() {
        let at = { (rate: Double) -> TimeSpan in
            let (plain, _) = Self.play(grid: nil, rate: rate)
            let grid = DisplayGrid(refresh: Self.refresh, refreshAt: plain.anchorSessionTime + .milliseconds(3),
                                   frame: Self.frame, frameAt: .zero)
            let (aligned, _) = Self.play(grid: grid, rate: rate)
            #expect(aligned.rate == rate)
            return aligned.anchorSessionTime - plain.anchorSessionTime
        }
        #expect(at(1.5) == .zero)  // 22.2 ms on the display: between one refresh and two
        #expect(at(2) == .milliseconds(3))  // one refresh a frame
        #expect(at(1) == .milliseconds(3))  // two
    }

    @Test func ofTwoDisplaysTheStartNearestBothIsTaken() {
        let (plain, _) = Self.play(grid: nil)
        var h = AuthorityHarness()
        let a = h.joinReady("alice", host: true)
        let first = h.joinReady("page 1")
        let second = h.joinReady("page 2")
        h.advance(ms: 1_000)
        // Refreshes 2 ms and 9 ms after the start that would be chosen: on the first's, the second is 7 ms off; on
        // the second's, the first is 7 ms off too. Equals: the earlier.
        h.advance(ms: 500)
        for id in [a, first, second] { h.send(.prepared(generation: h.authority.timeline.generation), from: id) }
        h.send(.linkReport(oneWayDelay: .zero, errorBound: .zero,
                           display: DisplayGrid(refresh: Self.refresh, refreshAt: plain.anchorSessionTime + .milliseconds(2))),
               from: first)
        h.send(.linkReport(oneWayDelay: .zero, errorBound: .zero,
                           display: DisplayGrid(refresh: Self.refresh, refreshAt: plain.anchorSessionTime + .milliseconds(9))),
               from: second)
        h.request(.play, from: a)
        #expect(h.authority.timeline.anchorSessionTime - plain.anchorSessionTime == .milliseconds(2))
        // A third display at 9.5 ms: on the first's refreshes it is 7.5 ms off, on its own the first is; on the
        // second's, the first is 7 ms off and the third 0.5 ms: the nearest all three.
        var h3 = AuthorityHarness()
        let a3 = h3.joinReady("alice", host: true)
        let pages = (1...3).map { h3.joinReady("page \($0)") }
        h3.advance(ms: 1_500)
        for id in [a3] + pages { h3.send(.prepared(generation: h3.authority.timeline.generation), from: id) }
        for (id, ms) in zip(pages, [2.0, 9.0, 9.5]) {
            h3.send(.linkReport(oneWayDelay: .zero, errorBound: .zero,
                                display: DisplayGrid(refresh: Self.refresh,
                                                     refreshAt: plain.anchorSessionTime + .milliseconds(ms))), from: id)
        }
        h3.request(.play, from: a3)
        #expect(h3.authority.timeline.anchorSessionTime - plain.anchorSessionTime == .milliseconds(9))
    }

    @Test func gridsNoDisplayOrMediaCanHaveAreIgnoredAndTheSwitchTurnsItOff() {
        let (plain, _) = Self.play(grid: nil)
        let near = plain.anchorSessionTime + .milliseconds(4)
        // A refresh of a second, of a millisecond, or a refresh time ten minutes away: ignored.
        for grid in [DisplayGrid(refresh: .seconds(1), refreshAt: near),
                     DisplayGrid(refresh: .milliseconds(1), refreshAt: near),
                     DisplayGrid(refresh: Self.refresh, refreshAt: near + .seconds(600))] {
            #expect(Self.play(grid: grid).0.anchorSessionTime == plain.anchorSessionTime)
        }
        // Frames of an hour, or before the media's start: the frames are dropped, the refreshes still count.
        for grid in [DisplayGrid(refresh: Self.refresh, refreshAt: near, frame: .seconds(3_600), frameAt: .zero),
                     DisplayGrid(refresh: Self.refresh, refreshAt: near, frame: Self.frame, frameAt: .seconds(-5))] {
            #expect(Self.play(grid: grid).0.anchorSessionTime == near)
        }
        // Hostile extremes (a refresh time of Int64.min or max, exactly Int64.min from now, frames at the far end
        // of their range, a start at the largest item time): no trap, and a start no more than a refresh later.
        // The report's own time: `play` sends it 1.5 s after the harness starts.
        let reportedAt = AuthorityHarness().now + .milliseconds(1_500)
        let extremes: [SessionInstant] = [SessionInstant(nanoseconds: .min), SessionInstant(nanoseconds: .max),
                                          SessionInstant(nanoseconds: reportedAt.nanoseconds &+ .min)]
        for refreshAt in extremes {
            #expect(Self.play(grid: DisplayGrid(refresh: Self.refresh, refreshAt: refreshAt)).0.anchorSessionTime
                    == plain.anchorSessionTime)
        }
        for (frame, frameAt) in [(TimeSpan.milliseconds(1), ItemTime.seconds(86_400)), (.seconds(1), .zero),
                                 (Self.frame, ItemTime(nanoseconds: .max)), (Self.frame, ItemTime(nanoseconds: .min))] {
            let moved = Self.play(grid: DisplayGrid(refresh: Self.refresh, refreshAt: near, frame: frame, frameAt: frameAt))
                .0.anchorSessionTime - plain.anchorSessionTime
            #expect(moved >= .zero && moved < Self.refresh)
        }
        let grid = DisplayGrid(refresh: Self.refresh, refreshAt: near, frame: Self.frame, frameAt: .milliseconds(12))
        for itemTime in [ItemTime(nanoseconds: .max), ItemTime(nanoseconds: .max - 1), .zero] {
            let at = grid.frameInstant(anchor: near, itemTime: itemTime, rate: 1)
            #expect(at.map { ($0 - near).nanoseconds.magnitude <= UInt64(Self.frame.nanoseconds / 2) } == true)
        }
        #expect(grid.frameInstant(anchor: near, itemTime: .zero, rate: 0) == nil)
        #expect(grid.frameInstant(anchor: near, itemTime: .zero, rate: .infinity) == nil)
        #expect(grid.frameInstant(anchor: near, itemTime: .zero, rate: .nan) == nil)
        var off = AuthorityConfiguration()
        off.alignsStartsToDisplays = false
        let (plainOff, _) = Self.play(grid: nil, configuration: off)
        let (unmoved, _) = Self.play(grid: DisplayGrid(refresh: Self.refresh, refreshAt: near), configuration: off)
        #expect(unmoved.anchorSessionTime == plainOff.anchorSessionTime)
    }
}
