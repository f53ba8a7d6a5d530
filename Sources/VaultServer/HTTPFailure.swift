import NIOHTTP1
import VaultCore
import VaultLoader

/// An error answer: a status and a one-line reason, sent as `X-Vault-Error` and as the
/// text body (never a stack trace or a path on disk).
struct HTTPFailure: Error, Sendable {
  let status: HTTPResponseStatus
  let reason: String
  /// Extra header fields of the answer (`X-Vault-Lease` on a lease refusal).
  var headers: [(String, String)] = []

  init(_ status: HTTPResponseStatus, _ reason: String) {
    self.status = status
    self.reason = reason
  }

  /// Maps vault and loader errors to statuses:
  /// unknown asset → 404; origin unreachable or misbehaving → 502; offline and not stored
  /// → 504; bytes not stored in an imported asset → 503; damaged chunk → 500 (refused);
  /// a lease that refuses the read → 403 with `X-Vault-Lease: <LeaseDenial.code>`.
  init(_ error: any Error) {
    switch error {
    case let failure as HTTPFailure:
      self = failure
    case let error as VaultError:
      switch error {
      case .unknownAsset, .ambiguousAsset: self.init(.notFound, error.description)
      case .chunkMissing: self.init(.serviceUnavailable, error.description)
      case .rangeNotSatisfiable: self.init(.rangeNotSatisfiable, error.description)
      case .leaseExpired(_, let denial):
        self.init(.forbidden, error.description)
        headers = [("X-Vault-Lease", denial.code)]
      default: self.init(.internalServerError, error.description)
      }
    case let error as LoaderError:
      switch error {
      case .offlineMissing: self.init(.gatewayTimeout, error.description)
      case .originStatus(_, let status) where status == 404 || status == 410:
        self.init(.notFound, error.description)
      case .originStatus, .originMisbehaved, .transport, .tooManyRedirects, .originChanged:
        self.init(.badGateway, error.description)
      case .rangeNotSatisfiable: self.init(.rangeNotSatisfiable, error.description)
      case .unsupportedURL: self.init(.badRequest, error.description)
      case .vault: self.init(.internalServerError, error.description)
      }
    default:
      self.init(.internalServerError, "\(error)")
    }
  }

  /// The reason as a header value: one line of printable ASCII, at most 200 characters.
  var headerValue: String {
    String(
      String(
        reason.unicodeScalars.map {
          $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
        }
      )
      .prefix(200))
  }
}
