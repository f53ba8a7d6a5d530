import Foundation

/// Decides the response to a request: correct RFC 9110 semantics, then the path's behaviours.
enum ResponsePlanner {
  /// Plans the response to a request that parsed.
  ///
  /// - Parameters:
  ///   - representation: What the path serves, nil when nothing is served there.
  ///   - closeAnyway: The origin is stopping or the connection reached its request limit.
  static func plan(
    _ request: HTTPRequest, snapshot: PathSnapshot, representation: Representation?,
    closeAnyway: Bool = false, now: Date = Date()
  ) -> ResponsePlan {
    let behaviors = snapshot.behaviors
    var plan = answer(request, snapshot: snapshot, representation: representation)
    if plan == nil, let representation {
      plan = serve(request, snapshot: snapshot, representation: representation)
    }
    var response = plan ?? textResponse(404)
    if request.method == "HEAD" || HTTPStatus.isBodiless(response.status) {
      response.sendsBody = false
    }
    applyDelivery(behaviors, to: &response)

    let noContentLength = behaviors.contains(.noContentLength)
    if noContentLength {
      response.headers.removeAll { $0.name == "Content-Length" }
    }
    if behaviors.contains(.noContentType) {
      response.headers.removeAll { $0.name == "Content-Type" }
    }
    if behaviors.contains(.lowercaseHeaderNames) { response.lowercaseNames = true }

    let closing = request.wantsClose || closeAnyway || noContentLength
    if closing {
      response.headers.append(("Connection", "close"))
    } else if request.minorVersion == 0 {
      response.headers.append(("Connection", "keep-alive"))
    }
    response.headers.insert(("Date", HTTPDate.format(now)), at: 0)
    response.closeAfter = closing || response.dropAfter != nil
    return response
  }

  /// A response that replaces the resource (method not allowed, status and redirect
  /// behaviours), or nil.
  private static func answer(
    _ request: HTTPRequest, snapshot: PathSnapshot, representation: Representation?
  ) -> ResponsePlan? {
    guard request.method == "GET" || request.method == "HEAD" else {
      var response = textResponse(405)
      response.headers.append(("Allow", "GET, HEAD"))
      return response
    }
    for behavior in snapshot.behaviors {
      switch behavior {
      case .always(let status):
        var response = textResponse(status)
        if status == 416, let representation {
          response.headers.append(("Content-Range", "bytes */\(representation.length)"))
        }
        return response
      case .failFirst(let count, let status) where snapshot.requestIndex < count:
        return textResponse(status)
      case .redirect(let target, let status):
        var response = textResponse(status)
        response.headers.append(("Location", target))
        return response
      case .redirectLoop:
        var response = textResponse(302)
        response.headers.append(("Location", request.target))
        return response
      default:
        continue
      }
    }
    return nil
  }

  /// The resource itself: 200, 206 or 416, with the range behaviours applied.
  private static func serve(
    _ request: HTTPRequest, snapshot: PathSnapshot, representation: Representation
  ) -> ResponsePlan {
    let behaviors = snapshot.behaviors
    let length = representation.length
    var etag = representation.etag
    if behaviors.contains(.changeETagEachRequest) {
      etag = EntityTag.perRequest(etag, request: snapshot.requestIndex)
    }
    if behaviors.contains(.noETag) { etag = nil }

    var resolution = RangeHeader.Resolution.full
    if request.method == "GET", !behaviors.contains(.ignoreRange),
      let range = request.header("Range"),
      ifRangeHolds(request.header("If-Range"), etag: etag, representation: representation)
    {
      resolution = RangeHeader.resolve(range, length: length)
    }

    var response: ResponsePlan
    switch resolution {
    case .unsatisfiable:
      response = textResponse(416)
      response.headers.append(("Content-Range", "bytes */\(length)"))
      return response
    case .full:
      response = ResponsePlan(status: 200, body: .representation(offset: 0, count: length))
    case .partial(let range):
      response = ResponsePlan(
        status: 206, body: .representation(offset: range.lowerBound, count: range.count))
    }
    if let contentType = representation.contentType {
      response.headers.append(("Content-Type", contentType))
    }
    if case .representation(_, let count) = response.body {
      response.headers.append(("Content-Length", "\(count)"))
    }
    if let lastModified = representation.lastModified {
      response.headers.append(("Last-Modified", HTTPDate.format(lastModified)))
    }
    if let etag { response.headers.append(("ETag", etag)) }
    response.headers.append(("Accept-Ranges", "bytes"))
    if case .partial(let range) = resolution, !behaviors.contains(.missingContentRange) {
      let shift = behaviors.contains(.wrongContentRange) ? 1 : 0
      let first = range.lowerBound + shift
      let last = range.upperBound + shift
      response.headers.append(("Content-Range", "bytes \(first)-\(last)/\(length)"))
    }
    return response
  }

  /// Whether a request's `If-Range` (RFC 9110 13.1.5) lets its `Range` apply: true when
  /// absent; an entity tag must match strongly; a date must equal `Last-Modified` exactly.
  static func ifRangeHolds(
    _ ifRange: String?, etag: String?, representation: Representation
  ) -> Bool {
    guard let ifRange = ifRange?.trimmingOWS(), !ifRange.isEmpty else { return true }
    if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
      guard let etag else { return false }
      return EntityTag.strongMatch(String(ifRange), etag)
    }
    guard let date = HTTPDate.parse(String(ifRange)), let lastModified = representation.lastModified
    else { return false }
    return date.timeIntervalSince1970 == lastModified.timeIntervalSince1970.rounded(.down)
  }

  /// Delivery behaviours: drop, trickle, stall.
  private static func applyDelivery(_ behaviors: [Behavior], to response: inout ResponsePlan) {
    for behavior in behaviors {
      switch behavior {
      case .dropAfter(let bytes): response.dropAfter = max(0, bytes)
      case .trickle(let rate): response.bytesPerSecond = max(1, rate)
      case .stallAfterHeaders(let seconds): response.stallSeconds = max(0, seconds)
      default: break
      }
    }
  }

  /// A status with a one-line text body (none for bodiless statuses).
  static func textResponse(_ status: Int) -> ResponsePlan {
    var response = ResponsePlan(status: status)
    guard !HTTPStatus.isBodiless(status) else { return response }
    let body = Array("\(status) \(HTTPStatus.reason(status))\n".utf8)
    response.body = .text(body)
    response.headers = [
      ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(body.count)"),
    ]
    return response
  }
}
