import NIOCore
import TandemCore

extension TimeAmount {
    /// The same span as NIO's time amount (a negative span is kept as is; NIO runs such a task at once).
    init(_ span: TimeSpan) { self = .nanoseconds(span.nanoseconds) }
}
