import NIOCore
import VaultCore

/// Open client connections, so shutdown can close them (a player streaming a film would
/// otherwise keep its connection forever).
final class ConnectionRegistry: Sendable {
  private let channels = Locked([ObjectIdentifier: any Channel]())

  /// Tracks `channel` until it closes.
  func add(_ channel: any Channel) {
    let key = ObjectIdentifier(channel)
    channels.withLock { $0[key] = channel }
    channel.closeFuture.whenComplete { _ in
      _ = self.channels.withLock { $0.removeValue(forKey: key) }
    }
  }

  /// Closes every tracked connection and waits until each has closed.
  func closeAll() async {
    let open = channels.withLock { Array($0.values) }
    for channel in open {
      channel.close(promise: nil)
      try? await channel.closeFuture.get()
    }
  }
}
