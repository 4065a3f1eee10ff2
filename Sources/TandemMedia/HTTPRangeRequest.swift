import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One blocking plain-HTTP/1.1 `GET` with a `Range` header, answered whole (`Connection: close`): the two small
/// reads `MediaFingerprint.ofHTTP` makes of a streamed item. Not a general client: no redirects, no TLS, no chunked
/// bodies (a host's media answer has a `Content-Length`). Blocks the calling thread for at most `timeout` per
/// socket operation.
struct HTTPRangeRequest {
    var status: Int
    var headers: [(String, String)]
    var body: Data

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    /// Most bytes read for one answer (head and body): a range of 64 KiB and its headers.
    static let maxAnswerBytes = 256 * 1024

    static func get(_ url: URL, range: ClosedRange<Int64>, timeout: TimeInterval) -> HTTPRangeRequest? {
        guard url.scheme?.lowercased() == "http", let host = url.host else { return nil }
        let port = url.port ?? 80
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bareHost, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return nil }
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let hostField = url.port.map { "\(host):\($0)" } ?? host
        let request = "GET \(target) HTTP/1.1\r\nHost: \(hostField)\r\nRange: bytes=\(range.lowerBound)-\(range.upperBound)\r\n"
            + "Connection: close\r\n\r\n"
        let sent = request.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
        guard sent == request.utf8.count else { return nil }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while answer.count < maxAnswerBytes {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            answer.append(contentsOf: buffer[..<count])
        }
        return parse(answer)
    }

    static func parse(_ answer: Data) -> HTTPRangeRequest? {
        guard let end = answer.firstRange(of: Data("\r\n\r\n".utf8)) else { return nil }
        let lines = String(decoding: answer[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Data(answer[end.upperBound...])
        if let length = headers.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }) {
            guard body.count >= length else { return nil }
            body = body.prefix(length)
        }
        return HTTPRangeRequest(status: status, headers: headers, body: body)
    }
}
