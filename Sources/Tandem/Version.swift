/// Tandem's release version (`tandem --version`, `make release`'s archive name). The wire protocol has its own
/// number, `tandemProtocolVersion`.
public enum TandemVersion {
    public static let string = "0.12.0"
}
