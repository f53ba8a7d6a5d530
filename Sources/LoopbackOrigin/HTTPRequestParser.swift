import Foundation

/// A parsed HTTP/1.x request head.
struct HTTPRequest: Sendable {
  /// The method, case-sensitive as sent.
  var method: String
  /// The request target as sent (origin-form or absolute-form).
  var target: String
  /// The percent-decoded path, the routing key.
  var path: String
  /// The raw query after `?`, nil when there was no `?`.
  var query: String?
  /// The minor version of HTTP/1.x.
  var minorVersion: Int
  /// The header fields in order, names as sent.
  var headers: [(name: String, value: String)]

  /// The combined value of a header field (case-insensitive name), nil when absent.
  func header(_ name: String) -> String? {
    let values = headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    return values.isEmpty ? nil : values.map(\.value).joined(separator: ", ")
  }

  /// Headers keyed by lowercased name, repeated fields joined.
  var headerDictionary: [String: String] {
    var result: [String: String] = [:]
    for (name, value) in headers {
      let key = name.lowercased()
      result[key] = result[key].map { "\($0), \(value)" } ?? value
    }
    return result
  }

  /// Whether the client wants the connection closed after this response.
  var wantsClose: Bool {
    let options = (header("Connection") ?? "").lowercased().split(separator: ",").map {
      $0.trimmingOWS()
    }
    if options.contains("close") { return true }
    return minorVersion == 0 && !options.contains("keep-alive")
  }
}

/// Splits a byte stream into request heads and parses them (RFC 9112).
enum HTTPRequestParser {
  /// A request head larger than this is refused with 431.
  static let maxHeadBytes = 32 * 1024

  /// Why a request head was refused; the associated status is sent before closing.
  enum Failure: Error, Equatable {
    case badRequest(String)
    case versionNotSupported
    case notImplemented(String)

    /// The response status for the failure.
    var status: Int {
      switch self {
      case .badRequest: 400
      case .versionNotSupported: 505
      case .notImplemented: 501
      }
    }
  }

  /// The index just past the blank line ending a head that starts at `start`, or nil when the
  /// buffer does not hold a whole head yet. Accepts CRLF and bare LF line ends.
  static func headEnd(in buffer: [UInt8], from start: Int) -> Int? {
    var index = start
    while index < buffer.count {
      if buffer[index] == 0x0A {
        if index + 1 < buffer.count && buffer[index + 1] == 0x0A { return index + 2 }
        if index + 2 < buffer.count && buffer[index + 1] == 0x0D && buffer[index + 2] == 0x0A {
          return index + 3
        }
      }
      index += 1
    }
    return nil
  }

  /// Parses a head (request line and fields, up to and including the blank line).
  static func parse(_ head: ArraySlice<UInt8>) throws(Failure) -> HTTPRequest {
    // Split bytes, not Characters: "\r\n" is a single Character in Swift.
    var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map {
      Substring(String(decoding: $0.last == 0x0D ? $0.dropLast() : $0, as: UTF8.self))
    }
    while lines.first?.isEmpty == true { lines.removeFirst() }  // RFC 9112 2.2: leading CRLFs
    while lines.last?.isEmpty == true { lines.removeLast() }
    guard let requestLine = lines.first else { throw .badRequest("empty request") }

    let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenCharacter),
      !parts[1].isEmpty
    else { throw .badRequest("malformed request line") }
    let minorVersion: Int
    switch parts[2] {
    case "HTTP/1.1": minorVersion = 1
    case "HTTP/1.0": minorVersion = 0
    case let version where version.hasPrefix("HTTP/") && version.count == 8:
      throw .versionNotSupported
    default: throw .badRequest("malformed HTTP version")
    }

    var headers: [(name: String, value: String)] = []
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { throw .badRequest("field without colon") }
      let name = line[..<colon]
      guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else {
        throw .badRequest("malformed field name")  // also rejects obs-fold and `Name :`
      }
      headers.append((String(name), String(line[line.index(after: colon)...].trimmingOWS())))
    }

    let (path, query) = try splitTarget(String(parts[1]))
    let request = HTTPRequest(
      method: String(parts[0]), target: String(parts[1]), path: path, query: query,
      minorVersion: minorVersion, headers: headers)
    let hosts = headers.filter { $0.name.caseInsensitiveCompare("Host") == .orderedSame }
    if minorVersion == 1 && hosts.count != 1 { throw .badRequest("HTTP/1.1 needs one Host") }
    if request.header("Transfer-Encoding") != nil {
      throw .notImplemented("request bodies with Transfer-Encoding")
    }
    if let length = request.header("Content-Length"), contentLength(length) == nil {
      throw .badRequest("malformed Content-Length")
    }
    return request
  }

  /// The request's `Content-Length` as a number (0 when absent).
  static func contentLength(of request: HTTPRequest) -> Int {
    request.header("Content-Length").flatMap(contentLength) ?? 0
  }

  private static func contentLength(_ value: String) -> Int? {
    // Repeated fields must agree (RFC 9110 8.6); they arrive joined by ", ".
    let values = Set(value.split(separator: ",").map { $0.trimmingOWS() })
    guard values.count == 1, let only = values.first, !only.isEmpty, only.count <= 18,
      only.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
    else { return nil }
    return Int(only)
  }

  /// Splits origin-form or absolute-form into the decoded path and the raw query.
  private static func splitTarget(_ target: String) throws(Failure) -> (String, String?) {
    var rest = Substring(target)
    if !rest.hasPrefix("/") {
      guard let scheme = rest.range(of: "://"),
        ["http", "https"].contains(rest[..<scheme.lowerBound].lowercased())
      else { throw .badRequest("unsupported request target") }
      rest = rest[scheme.upperBound...]
      rest = rest.firstIndex(where: { $0 == "/" || $0 == "?" }).map { rest[$0...] } ?? ""
    }
    if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
    var query: String?
    if let mark = rest.firstIndex(of: "?") {
      query = String(rest[rest.index(after: mark)...])
      rest = rest[..<mark]
    }
    let rawPath = rest.isEmpty ? "/" : String(rest)
    let path = rawPath.hasPrefix("/") ? rawPath : "/" + rawPath
    return (path.removingPercentEncoding ?? path, query)
  }

  private static func isTokenCharacter(_ character: Character) -> Bool {
    guard let ascii = character.asciiValue, ascii > 0x20, ascii < 0x7F else { return false }
    return !"\"(),/:;<=>?@[\\]{}".contains(character)
  }
}
