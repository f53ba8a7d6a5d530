import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A minimal blocking HTTP/1.1 client over one keep-alive socket, for load tests that need
/// exactly one connection per client (URLSession pools connections its own way).
final class RawHTTPClient {
  private let descriptor: Int32
  private var buffer: [UInt8] = []

  struct Failure: Error, CustomStringConvertible { let description: String }

  init(port: Int, timeoutSeconds: Int = 20) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw Failure(description: "socket failed") }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(
      descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      close(descriptor)
      throw Failure(description: "connect failed: errno \(errno)")
    }
  }

  deinit { close(descriptor) }

  /// Sends a GET (with an optional Range) and reads the whole response.
  func get(_ target: String, port: Int, range: String? = nil) throws -> (
    status: Int, headers: [String: String], body: [UInt8]
  ) {
    var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
    if let range { request += "Range: \(range)\r\n" }
    request += "\r\n"
    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
      guard n > 0 else { throw Failure(description: "send failed") }
      sent += n
    }
    let terminator: [UInt8] = [13, 10, 13, 10]
    var headerEnd: Int?
    while headerEnd == nil {
      headerEnd = find(terminator)
      if headerEnd == nil { try fill() }
    }
    let end = headerEnd ?? 0
    let head = String(decoding: buffer[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
    buffer.removeFirst(end + 4)
    let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    var headers: [String: String] = [:]
    for line in head.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
        .trimmingCharacters(in: .whitespaces)
    }
    let length = Int(headers["content-length"] ?? "0") ?? 0
    while buffer.count < length { try fill() }
    let body = Array(buffer[0..<length])
    buffer.removeFirst(length)
    return (status, headers, body)
  }

  /// Sends a GET and reads only the response head and about `bytes` of the body, leaving
  /// the rest unread (a client that stops reading, like a paused player).
  func startGet(_ target: String, port: Int, readingAbout bytes: Int) throws -> Int {
    let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    let n = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    guard n == request.count else { throw Failure(description: "send failed") }
    while buffer.count < bytes { try fill() }
    return buffer.count
  }

  private func fill() throws {
    var chunk = [UInt8](repeating: 0, count: 256 * 1024)
    let n = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
    guard n > 0 else { throw Failure(description: "connection closed or timed out (\(n))") }
    buffer += chunk[0..<n]
  }

  private func find(_ pattern: [UInt8]) -> Int? {
    guard buffer.count >= pattern.count else { return nil }
    for i in 0...(buffer.count - pattern.count) where buffer[i] == pattern[0] {
      if Array(buffer[i..<(i + pattern.count)]) == pattern { return i }
    }
    return nil
  }
}
