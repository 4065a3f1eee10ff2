import Foundation
import NIOCore
import TandemCore
@_spi(EventLoopAccess) import TandemNet

extension RelayBenchmark {
    /// The load generator's senders on one event loop, sending at a fixed rate from one timer.
    ///
    /// A repeating NIO timer per participant (what this replaced) put thousands of tasks in each loop's timer
    /// heap, each rescheduled ten times a second, and they fired in bursts (0.9 ms late at p99 at 1,500
    /// participants, and not every scheduled message went out). Here every
    /// participant of the loop has the same interval and the phases lie within one interval, so the participants
    /// due next are simply the front of a queue: the one timer fires at the earliest due time, sends for everyone
    /// due by then, puts each at the back with its next due time (`interval` later, keeping the queue in order)
    /// and sets itself for the new front. How late a send is against its schedule is the generator's lag.
    /// Senders due within `slack` of the front go with it (up to 0.25 ms early): a wake-up of the loop for every
    /// single message cost the generator a tenth of its core at 1,500 participants.
    final class LoopSenders: @unchecked Sendable {
        // @unchecked Sendable: built before `start`, then touched only on `loop`.
        /// What each sender sends when it is due.
        enum Traffic {
            /// A reliable app message to everyone of `payloadSize` bytes, stamped with the send time and the
            /// sender's index (the load).
            case appMessages(payloadSize: Int)
            /// A link report from the sender's clock estimate, as a real peer's coordinator sends one a second.
            case linkReports
        }

        struct Sender {
            let link: TandemClientConnection
            let index: Int
            /// Recipients of each of its messages (the others in its session).
            let others: Int
        }

        private let loop: any EventLoop
        private let clock: SystemMonotonicClock
        private let interval: Int64
        private let endAt: Int64
        private let traffic: Traffic
        private let record: @Sendable (_ lag: Int64, _ sent: Bool, _ others: Int) -> Void
        private var senders: [Sender] = []
        /// Due time and sender, in due order.
        private var queue = CircularBuffer<(due: Int64, sender: Int)>()
        private var timer: Scheduled<Void>?
        private let slack: Int64 = 250_000

        /// `record` hears of every app message sent (how late, whether the connection took it, its recipients);
        /// link reports are not recorded.
        init(loop: any EventLoop, clock: SystemMonotonicClock, interval: Int64, endAt: Int64, traffic: Traffic,
             record: @escaping @Sendable (_ lag: Int64, _ sent: Bool, _ others: Int) -> Void) {
            self.loop = loop
            self.clock = clock
            self.interval = interval
            self.endAt = endAt
            self.traffic = traffic
            self.record = record
        }

        /// Adds a sender due first at `firstDue`; call in order of `firstDue`, all within one interval.
        func add(_ sender: Sender, firstDue: Int64) {
            queue.append((firstDue, senders.count))
            senders.append(sender)
        }

        func start() {
            loop.execute { self.arm() }
        }

        func stop() {
            loop.execute {
                self.timer?.cancel()
                self.timer = nil
                self.queue.removeAll()
            }
        }

        private func arm() {
            guard let next = queue.first, next.due < endAt else { return }
            timer = loop.scheduleTask(in: .nanoseconds(Swift.max(0, next.due - clock.now.nanoseconds))) { self.fire() }
        }

        private func fire() {
            let now = clock.now.nanoseconds
            while let first = queue.first, first.due <= now + slack {
                queue.removeFirst()
                guard first.due < endAt else { continue }
                send(senders[first.sender], now: now, lag: Swift.max(0, now - first.due))
                queue.append((first.due + interval, first.sender))
            }
            arm()
        }

        private func send(_ sender: Sender, now: Int64, lag: Int64) {
            switch traffic {
            case .appMessages(let payloadSize):
                var payload = Data(count: payloadSize)
                payload.withUnsafeMutableBytes { raw in
                    raw.storeBytes(of: now, as: Int64.self)
                    raw.storeBytes(of: Int64(sender.index), toByteOffset: 8, as: Int64.self)
                }
                record(lag, sender.link.writeAppMessageOnLoop(payload), sender.others)
            case .linkReports:
                guard let quality = sender.link.clockQuality() else { return }
                _ = sender.link.writeOnLoop(.linkReport(oneWayDelay: quality.roundTrip / Int64(2), errorBound: quality.errorBound))
            }
        }
    }
}
