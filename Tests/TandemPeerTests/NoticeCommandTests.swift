import Foundation
import Testing
import TandemPeer

@Suite("The notice command and preview images")
struct NoticeCommandTests {
    @Test("`notice TEXT` keeps the text as typed; without text it says what to write")
    func noticeParses() throws {
        #expect(try UserCommand.parse(line: "notice back in 5 minutes") == .notice("back in 5 minutes"))
        #expect(try UserCommand.parse(line: "  NOTICE\tPopcorn  time ") == .notice("Popcorn  time"))
        #expect(throws: UserCommandError.self) { try UserCommand.parse(line: "notice   ") }
    }

    @Test("a preview image is judged by its first bytes and bounded in size")
    func previewChecks() throws {
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0])
        #expect(try PreviewImage(bytes: png).format == "png")
        #expect(try PreviewImage(bytes: Data([0xFF, 0xD8, 0xFF, 0xE0])).format == "jpeg")
        #expect(try PreviewImage(bytes: Data("GIF89a..".utf8)).format == "gif")
        #expect(try PreviewImage(bytes: Data("RIFF\0\0\0\0WEBPVP8 ".utf8)).format == "webp")
        #expect(throws: PreviewImage.Problem.notAnImage) { try PreviewImage(bytes: Data("hello".utf8)) }
        let big = png + Data(count: PreviewImage.maxBytes)
        #expect(throws: PreviewImage.Problem.tooLarge(bytes: big.count)) { try PreviewImage(bytes: big) }
        // Decoding checks again: the bytes come from the network.
        let forged = Data(#"{"format":"png","bytes":"aGVsbG8="}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PreviewImage.self, from: forged) }
        let round = try JSONDecoder().decode(PreviewImage.self, from: JSONEncoder().encode(try PreviewImage(bytes: png)))
        #expect(round.bytes == png)
    }
}
