import NIOPosix
import VaultCore
import VaultLoader

/// Everything a request needs, shared by all connections of one server.
final class ServerContext: Sendable {
  let vault: Vault
  let loader: RangeLoader
  let token: AccessToken
  let hostCheck: HostCheck
  let corsOrigin: String?
  let log: (@Sendable (String) -> Void)?
  /// Where blocking work runs (SQLite look-ups, decrypting blocks): never the event loop.
  let pool: NIOThreadPool
  let tasks = TaskRegistry()
  let readers = ReaderPool()
  /// Bytes answered straight from the vault, for `vault stats`.
  let served: ServedCounters
  /// Bytes per body write: large writes keep syscalls and event-loop hops rare.
  let blockSize = 1 << 20

  init(
    vault: Vault, loader: RangeLoader, token: AccessToken, hostCheck: HostCheck,
    corsOrigin: String?, log: (@Sendable (String) -> Void)?, pool: NIOThreadPool
  ) {
    self.vault = vault
    served = ServedCounters(vault: vault)
    self.loader = loader
    self.token = token
    self.hostCheck = hostCheck
    self.corsOrigin = corsOrigin
    self.log = log
    self.pool = pool
  }
}
