@_exported import TandemCore
@_exported import TandemMedia
@_exported import TandemNet
