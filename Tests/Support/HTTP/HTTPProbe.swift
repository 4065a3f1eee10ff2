import Foundation
import NIOCore
import NIOPosix

/// An HTTP answer as it came off the socket.
public struct HTTPAnswer: Sendable {
    /// The status code (0 when nothing parsable came back).
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    public var body: String
    /// Everything received, head included.
    public var raw: String
}

public enum HTTPProbeError: Error, CustomStringConvertible {
    case timedOut(seconds: Double, received: String)

    public var description: String {
        switch self {
        case .timedOut(let seconds, let received): "no end of the answer within \(seconds) s; received: \(received.prefix(300))"
        }
    }
}

/// A plain HTTP/1 client over a real socket, for servers that close after one answer: it writes the bytes it is
/// given (well-formed or not) and reads until the server closes, within a timeout.
public enum HTTPProbe {
    /// `GET path` with `Connection: close`.
    public static func get(_ path: String, port: Int, host: String = "127.0.0.1", method: String = "GET",
                           timeout: Double = 10) async throws -> HTTPAnswer {
        try await send("\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n", port: port, host: host,
                       timeout: timeout)
    }

    /// Writes `request` as it is and reads the answer until the server closes the connection.
    public static func send(_ request: String, port: Int, host: String = "127.0.0.1",
                            timeout: Double = 10) async throws -> HTTPAnswer {
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in channel.pipeline.addHandler(collector) }
            .connect(host: host, port: port).get()
        let received = collector.received(on: channel.eventLoop)
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) {
            collector.timedOut = true
            channel.close(promise: nil)
        }
        channel.writeAndFlush(channel.allocator.buffer(string: request), promise: nil)
        let (bytes, closedByDeadline) = try await received.get()
        deadline.cancel()
        let raw = String(decoding: bytes, as: UTF8.self)
        if closedByDeadline { throw HTTPProbeError.timedOut(seconds: timeout, received: raw) }
        return parse(raw)
    }

    static func parse(_ raw: String) -> HTTPAnswer {
        guard let split = raw.range(of: "\r\n\r\n") else { return HTTPAnswer(status: 0, headers: [:], body: "", raw: raw) }
        let lines = raw[..<split.lowerBound].components(separatedBy: "\r\n")
        let status = lines.first.flatMap { line in line.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, headers: headers, body: String(raw[split.upperBound...]), raw: raw)
    }

    /// Collects the bytes of one connection until it closes.
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked Sendable: its state is touched only on its channel's event loop (the handler's callbacks, the
        // deadline's task, and `received(on:)`, which hops there).
        typealias InboundIn = ByteBuffer
        private var bytes: [UInt8] = []
        private var promise: EventLoopPromise<([UInt8], Bool)>?
        private var closed = false
        /// Whether the deadline closed the connection (rather than the server).
        var timedOut = false

        func received(on loop: any EventLoop) -> EventLoopFuture<([UInt8], Bool)> {
            loop.flatSubmit {
                let promise = loop.makePromise(of: ([UInt8], Bool).self)
                if self.closed { promise.succeed((self.bytes, self.timedOut)) } else { self.promise = promise }
                return promise.futureResult
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)  // a reset: what was read is the answer
        }

        func channelInactive(context: ChannelHandlerContext) {
            closed = true
            promise?.succeed((bytes, timedOut))
            promise = nil
        }
    }
}
