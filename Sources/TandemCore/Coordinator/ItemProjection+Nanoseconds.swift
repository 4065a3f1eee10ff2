extension ItemProjection {
    /// The item time this line renders at session time `t` (ns).
    func item(at t: Int64) -> ItemTime { self(SessionInstant(nanoseconds: t)) }
}
