import TandemCrypto
import Foundation
import TandemCore
import Testing
@testable import TandemNet

@Suite("App data cipher")
struct AppDataCipherTests {
    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> Data {
        var out = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// The known answers the browser page checks too (`scripts/web-peer-check.py --vectors`), computed apart from
    /// both with Python's `cryptography` (`scripts/make-app-data-vectors.py`).
    struct Vectors: Decodable {
        struct Place: Decodable {
            var kind: String
            var sender: String?, delivery: UInt8?, sequence: UInt64?
            var owner: String?, id: String?, index: UInt64?, final: Bool?

            var sealed: SealedPlace {
                switch kind {
                case "message":
                    return .message(sender: ParticipantID(sender!), delivery: delivery == 0 ? .reliable : .unreliable,
                                    sequence: sequence!)
                case "name": return .attachmentName(owner: ParticipantID(owner!), id: id!)
                default: return .attachmentRecord(owner: ParticipantID(owner!), id: id!, index: index!, final: final!)
                }
            }
        }
        struct Box: Decodable {
            var name: String, place: Place, aad: String, nonce: String, plaintext: String, box: String
        }
        var secret: String, session: String, info: String, key: String
        var boxes: [Box]

        static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/app-data-v2.json")
        static func load() throws -> Vectors { try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url)) }
    }

    @Test("the key derivation, each place's associated data and each box match the shared known answers")
    func knownAnswers() throws {
        let vectors = try Vectors.load()
        #expect(vectors.info == AppDataCipher.info)
        let cipher = AppDataCipher(secret: vectors.secret, session: vectors.session)
        #expect(Self.hex(cipher.keyBytes) == vectors.key)
        #expect(cipher.overhead == 28)
        #expect(vectors.boxes.count >= 6)
        for vector in vectors.boxes {
            let place = vector.place.sealed
            #expect(Self.hex(place.associatedData(session: vectors.session)) == vector.aad, "\(vector.name)")
            let plaintext = Self.bytes(hex: vector.plaintext)
            let nonce = try AES.GCM.Nonce(data: Self.bytes(hex: vector.nonce))
            #expect(Self.hex(try cipher.seal(plaintext, at: place, nonce: nonce)) == vector.box, "\(vector.name)")
            #expect(try cipher.open(Self.bytes(hex: vector.box), at: place) == plaintext, "\(vector.name)")
        }
        // A version 1 key (no associated data) is another key: mixed versions fail loudly.
        #expect(Self.hex(cipher.keyBytes) != "bcf9205a0233efbc8782c7348bcd78ac1342039a4b9d79f25c7415be9b317456")
    }

    @Test("a box opens only in the place it was sealed for: another sender, delivery, number or session fails")
    func boundToItsPlace() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let place = SealedPlace.message(sender: ParticipantID("p1"), delivery: .reliable, sequence: 5)
        let box = try cipher.seal(Data("pay the bearer".utf8), at: place)
        #expect(try cipher.open(box, at: place) == Data("pay the bearer".utf8))
        for elsewhere: SealedPlace in [.message(sender: ParticipantID("p3"), delivery: .reliable, sequence: 5),
                                       .message(sender: ParticipantID("p1"), delivery: .unreliable, sequence: 5),
                                       .message(sender: ParticipantID("p1"), delivery: .reliable, sequence: 6),
                                       .attachmentName(owner: ParticipantID("p1"), id: "5")] {
            #expect(throws: (any Error).self) { try cipher.open(box, at: elsewhere) }
        }
        for index in [0, 11, 12, box.count - 17, box.count - 1] {
            var altered = box
            altered[index] ^= 0x01
            #expect(throws: (any Error).self) { try cipher.open(altered, at: place) }
        }
        #expect(throws: (any Error).self) { try cipher.open(box.dropLast(), at: place) }
        #expect(throws: (any Error).self) { try cipher.open(Data(count: 10), at: place) }
        // Same secret, another session: another key (and another place).
        #expect(throws: (any Error).self) { try AppDataCipher(secret: "sesame", session: "s2").open(box, at: place) }
        #expect(throws: (any Error).self) { try AppDataCipher(secret: "sesame!", session: "s1").open(box, at: place) }
        // Two seals of the same plaintext differ (fresh nonces).
        let again = try cipher.seal(Data("pay the bearer".utf8), at: place)
        #expect(again.prefix(12) != box.prefix(12))
    }

    @Test("a long attachment name is bounded before sealing, so the authority never truncates a sealed name")
    func longNamesFitSealed() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let sealed = try cipher.sealName(String(repeating: "é", count: 1_000), owner: ParticipantID("p1"), id: "a")
        #expect(sealed.utf8.count <= TextBounds.maxAttachmentNameBytes)
        let opened = try cipher.openName(sealed, owner: ParticipantID("p1"), id: "a")
        #expect(opened.utf8.count <= TextBounds.maxPlainAttachmentNameBytes && opened.utf8.count >= 250)
        #expect(opened.allSatisfy { $0 == "é" })
    }

    @Test("attachment records open however the stream is cut, and not when shuffled, truncated, moved or renamed")
    func records() throws {
        let cipher = AppDataCipher(secret: "sesame", session: "s1")
        let data = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let sealed = try cipher.sealRecords(data, pieceSize: 4096, owner: ParticipantID("p1"), id: "poster")
        // Three records: 4096, 4096 and 1808 plaintext bytes, each framed by a 4-byte length.
        #expect(sealed.count == data.count + 3 * (4 + cipher.overhead))
        #expect(sealed.prefix(4) == Data([0, 0, 0x10, 0x1c]))  // 4096 + 28
        #expect(try cipher.openRecords(sealed, owner: ParticipantID("p1"), id: "poster") == data)
        #expect(try cipher.openRecords(Data(sealed), owner: ParticipantID("p1"), id: "poster") == data)
        let records = Self.records(sealed)
        #expect(records.count == 3)

        // Shuffled, truncated at a record's boundary, a record repeated, or moved to another attachment or owner.
        let refused: [(String, Data, ParticipantID, String)] = [
            ("swapped", records[1] + records[0] + records[2], ParticipantID("p1"), "poster"),
            ("last record cut off", records[0] + records[1], ParticipantID("p1"), "poster"),
            ("first record cut off", records[1] + records[2], ParticipantID("p1"), "poster"),
            ("a record twice", records[0] + records[1] + records[1] + records[2], ParticipantID("p1"), "poster"),
            ("nothing left", Data(), ParticipantID("p1"), "poster"),
            ("another attachment's id", sealed, ParticipantID("p1"), "other"),
            ("another owner", sealed, ParticipantID("p3"), "poster"),
            ("a byte short", sealed.dropLast(), ParticipantID("p1"), "poster"),
        ]
        for (why, stream, owner, id) in refused {
            #expect(throws: (any Error).self, "\(why)") { try cipher.openRecords(stream, owner: owner, id: id) }
        }
        // Records of another attachment spliced in: refused too.
        let other = Self.records(try cipher.sealRecords(data, pieceSize: 4096, owner: ParticipantID("p1"), id: "other"))
        #expect(throws: (any Error).self) {
            try cipher.openRecords(records[0] + other[1] + records[2], owner: ParticipantID("p1"), id: "poster")
        }
        var altered = sealed
        altered[sealed.count / 2] ^= 0x80
        #expect(throws: (any Error).self) { try cipher.openRecords(altered, owner: ParticipantID("p1"), id: "poster") }

        // An empty attachment is one empty final record, so it is told from a stream cut to nothing.
        let empty = try cipher.sealRecords(Data(), pieceSize: 4096, owner: ParticipantID("p1"), id: "empty")
        #expect(empty.count == 4 + cipher.overhead)
        #expect(try cipher.openRecords(empty, owner: ParticipantID("p1"), id: "empty") == Data())

        let name = try cipher.sealName("holiday photos.zip", owner: ParticipantID("p1"), id: "poster")
        #expect(!name.contains("holiday"))
        #expect(try cipher.openName(name, owner: ParticipantID("p1"), id: "poster") == "holiday photos.zip")
        #expect(throws: (any Error).self) { try cipher.openName(name, owner: ParticipantID("p1"), id: "other") }
        #expect(throws: (any Error).self) { try cipher.openName(name, owner: ParticipantID("p2"), id: "poster") }
        #expect(throws: (any Error).self) {
            try AppDataCipher(secret: "x", session: "s1").openName(name, owner: ParticipantID("p1"), id: "poster")
        }
    }

    /// The records of a sealed stream, each with its length prefix.
    static func records(_ sealed: Data) -> [Data] {
        var out: [Data] = []
        var index = sealed.startIndex
        while index < sealed.endIndex {
            let length = sealed[index..<index + 4].reduce(0) { ($0 << 8) | Int($1) }
            out.append(sealed.subdata(in: index..<index + 4 + length))
            index += 4 + length
        }
        return out
    }
}
