// MessagesAndJournal: an app's own data in a session. ann starts a session on an embedded server on 127.0.0.1 and
// shares two attachments; bob joins later and still receives them, then they exchange messages; bob, not the host,
// is refused when he tries to end the session for everyone; ann ends it.
//
//   swift run MessagesAndJournal
import Foundation
import Tandem

struct Whiteboard: GroupActivity {
    var name: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: name, type: .createTogether) }
}

// snippet: types
struct Reaction: Codable, Sendable { var emoji: String }          // a message
struct Sketch: Codable, Sendable { var title: String; var strokes: Int }   // an attachment
// snippet end

Task {   // however it goes, this example ends
    try await Task.sleep(for: .seconds(30))
    print("MessagesAndJournal: gave up after 30 s")
    exit(1)
}

let server = try await SessionServer.start(host: "127.0.0.1", port: 0)
let activation = try await Whiteboard(name: "Plans").activate(on: .embedded(server), name: "ann")
let ann = activation.session
let inbox = InviteInbox()
inbox.deliver(activation.invite)
inbox.close()
guard let bob = await Whiteboard.sessions(invites: inbox, name: "bob").first(where: { _ in true }) else {
    fatalError("bob cannot reach the session")
}

// snippet: setup
// Made before anything arrives, so nothing is missed: journals receive the attachments already there.
let annJournal = GroupSessionJournal(session: ann), bobJournal = GroupSessionJournal(session: bob)
let annMessenger = GroupSessionMessenger(session: ann)   // .reliable: in order, to everyone there
let bobMessenger = GroupSessionMessenger(session: bob)
for work in [ann.run, bob.run, annJournal.run, bobJournal.run] { Task { await work() } }
// snippet end

// snippet: journal
_ = try await annJournal.add(Data("plan.png bytes".utf8))       // bytes…
_ = try await annJournal.add(Sketch(title: "floor plan", strokes: 42))   // …or any Codable value
try await bob.joinNow()                                         // bob arrives after both were added
for await attachments in bobJournal.attachments where attachments.count == 2 {
    for attachment in attachments {                             // announced; fetched by load()
        if attachment.holds(Sketch.self) {
            let sketch = try await attachment.load(Sketch.self)
            print("bob loaded a sketch: \(sketch.title), \(sketch.strokes) strokes")
        } else {
            print("bob loaded \(try await attachment.load().count) bytes")
        }
    }
    break
}
// snippet end

// snippet: messages
let reactions = annMessenger.messages(of: Reaction.self)        // subscribe before the others send
try await bobMessenger.send(Reaction(emoji: "👍"))
for await (reaction, context) in reactions {
    let sender = ann.participant(for: context)?.name ?? "?"     // the source is stamped by the server
    print("ann got \(reaction.emoji) from \(sender)")
    break
}
// snippet end

// snippet: refusal
do {
    try await bob.end()                                         // only the host may end it for everyone
} catch GroupSessionError.refused(let refusal) where refusal.code == .notHost {
    print("bob was refused: \(refusal.reason)")
}
// snippet end

try await ann.end()
for _ in 0..<50 where bob.state == .joined { try await Task.sleep(for: .milliseconds(100)) }
if case .invalidated(let reason) = bob.state { print("bob: \(reason)") }
await server.shutdown()
