import Foundation
import Tandem
import Testing
import TandemPeer

@Suite("Media activity")
struct MediaActivityTests {
    func probe(duration: TimeSpan?, contentID: String?, video: Bool = true, title: String? = nil) -> MediaProbe {
        let stream = MediaProbe.Stream(kind: video ? .video : .audio, codec: video ? "VP9" : "Opus", caps: "")
        return MediaProbe(location: "file:///tmp/movie.webm", duration: duration, isSeekable: true, container: "WebM",
                          title: title, streams: [stream], contentID: contentID)
    }

    @Test("the activity takes its title, type and fingerprint from the probe")
    func fromProbe() {
        let activity = MediaActivity(probe: probe(duration: 90_000_000_000, contentID: "abc", video: false, title: "Song"),
                                     path: "/tmp/song.ogg", title: nil, subtitle: "live", type: nil, fallbackURL: nil)
        #expect(activity.fileName == "song.ogg")
        #expect(activity.metadata.title == "Song")
        #expect(activity.metadata.type == .listenTogether)
        #expect(activity.itemID == "abc")
        #expect(activity.summary == "\"Song\" — live (listenTogether, 1:30)")
    }

    @Test("a joiner's copy differs by content or by more than 1.5 s of duration")
    func difference() {
        let host = MediaActivity(probe: probe(duration: 60_000_000_000, contentID: "abc"), path: "/m/movie.webm",
                                 title: nil, subtitle: nil, type: nil, fallbackURL: nil)
        #expect(host.difference(from: probe(duration: 60_000_000_000, contentID: "abc")) == nil)
        #expect(host.difference(from: probe(duration: 61_000_000_000, contentID: nil)) == nil)
        #expect(host.difference(from: probe(duration: 62_000_000_000, contentID: nil)) == "your file lasts 62.0 s, the host's 60.0 s")
        #expect(host.difference(from: probe(duration: 60_000_000_000, contentID: "xyz"))
            == "your file's content differs from the host's (movie.webm)")
    }

    @Test("item times format as m:ss or h:mm:ss")
    func clock() {
        #expect(formatClock(0) == "0:00")
        #expect(formatClock(61_500_000_000) == "1:01")
        #expect(formatClock(3_725_000_000_000) == "1:02:05")
        #expect(formatClock(-5) == "0:00")
    }

    @Test("a missing sample says where it was looked for and what to do")
    func missingSample() {
        #expect(throws: MissingSample.self) { try Samples.path("no-such-sample-\(UUID().uuidString).webm") }
    }
}
