import NIOCore
import NIOHTTP1
import NIOPosix

extension WebMedia {
    /// Size of each read and write of a media response.
    static let chunkSize = 64 * 1024

    /// Sends `bytes` of the file at `path` as the body of the response begun on `channel`, then its end: each chunk
    /// is read once the socket has taken the one before (so a slow reader holds one chunk here, not the file),
    /// no earlier than `pacing.bytesPerSecond` allows, and the response fails when the socket takes nothing for
    /// `pacing.idleTimeout`.
    static func stream(path: String, bytes: ClosedRange<Int64>, to channel: any Channel,
                       pacing: Pacing) -> EventLoopFuture<Void> {
        let io = NonBlockingFileIO(threadPool: .singleton)
        let loop = channel.eventLoop
        return io.openFile(_deprecatedPath: path, eventLoop: loop).flatMap { handle, _ in
            let body = BodyWriter(io: io, handle: handle, channel: channel, bytes: bytes, pacing: pacing)
            return body.run().always { _ in try? handle.close() }
        }.flatMap {
            channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        }
    }

    /// One response's body in flight. Only touched on its channel's event loop: every step runs in a callback of a
    /// future or a task scheduled on that loop.
    private final class BodyWriter: @unchecked Sendable {
        let io: NonBlockingFileIO
        let handle: NIOFileHandle
        let channel: any Channel
        let bytes: ClosedRange<Int64>
        let pacing: Pacing
        let started = NIODeadline.now()
        let done: EventLoopPromise<Void>
        var sent: Int64 = 0
        var finished = false

        init(io: NonBlockingFileIO, handle: NIOFileHandle, channel: any Channel, bytes: ClosedRange<Int64>, pacing: Pacing) {
            self.io = io
            self.handle = handle
            self.channel = channel
            self.bytes = bytes
            self.pacing = pacing
            done = channel.eventLoop.makePromise()
        }

        func run() -> EventLoopFuture<Void> {
            // A reader that hangs up (a player seeking elsewhere) frees its place at once, not at the next write.
            channel.closeFuture.whenComplete { _ in self.finish(.failure(ChannelError.alreadyClosed)) }
            next()
            return done.futureResult
        }

        private func finish(_ result: Result<Void, any Error>) {
            guard !finished else { return }
            finished = true
            done.completeWith(result)
        }

        private func next() {
            guard !finished else { return }
            let total = Int64(bytes.count)
            guard sent < total else {
                finish(.success(()))
                return
            }
            let loop = channel.eventLoop
            let count = Int(min(Int64(WebMedia.chunkSize), total - sent))
            io.read(fileHandle: handle, fromOffset: bytes.lowerBound + sent, byteCount: count,
                    allocator: channel.allocator, eventLoop: loop).flatMap { chunk -> EventLoopFuture<Int> in
                guard chunk.readableBytes > 0 else { return loop.makeFailedFuture(ChannelError.eof) }
                let channel = self.channel
                let idle = loop.scheduleTask(in: self.pacing.idleTimeout) { channel.close(promise: nil) }
                return channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(chunk)))
                    .always { _ in idle.cancel() }
                    .map { chunk.readableBytes }
            }.whenComplete { result in
                switch result {
                case .failure(let error):
                    self.finish(.failure(error))
                case .success(let written):
                    self.sent += Int64(written)
                    self.afterChunk()
                }
            }
        }

        /// The next chunk at once, or when the bytes sent so far are due at the paced rate.
        private func afterChunk() {
            guard pacing.bytesPerSecond > 0 else { return next() }
            let due = started + .nanoseconds(Int64(Double(sent) / Double(pacing.bytesPerSecond) * 1e9))
            if due <= .now() { return next() }
            channel.eventLoop.scheduleTask(deadline: due) { self.next() }
        }
    }
}
