import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// HTTP dates (RFC 9110 section 5.6.7): IMF-fixdate out; IMF-fixdate, RFC 850 and asctime in.
enum HTTPDate {
  private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  private static let months = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]

  /// `Sun, 06 Nov 1994 08:49:37 GMT` (whole seconds, rounded down).
  static func format(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    guard gmtime_r(&seconds, &parts) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let day = days[Int(parts.tm_wday) % 7]
    let month = months[Int(parts.tm_mon) % 12]
    let time = "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) \(time) GMT"
  }

  /// Parses any of the three HTTP date formats; nil when the text is not one of them.
  static func parse(_ text: String) -> Date? {
    let value = text.trimmingOWS()
    if let comma = value.firstIndex(of: ",") {
      let fields = value[value.index(after: comma)...].split(separator: " ")
      if fields.count == 3, fields[2] == "GMT" {  // RFC 850: 06-Nov-94 08:49:37 GMT
        let dayMonthYear = fields[0].split(separator: "-", omittingEmptySubsequences: false)
        guard dayMonthYear.count == 3, dayMonthYear[2].count == 2,
          let shortYear = Int(dayMonthYear[2])
        else { return nil }
        let year = shortYear < 70 ? 2000 + shortYear : 1900 + shortYear
        return make(day: dayMonthYear[0], month: dayMonthYear[1], year: year, time: fields[1])
      }
      // IMF-fixdate: 06 Nov 1994 08:49:37 GMT
      guard fields.count == 5, fields[4] == "GMT", fields[2].count == 4, let year = Int(fields[2])
      else { return nil }
      return make(day: fields[0], month: fields[1], year: year, time: fields[3])
    }
    // asctime: Sun Nov  6 08:49:37 1994
    let fields = value.split(separator: " ")
    guard fields.count == 5, fields[4].count == 4, let year = Int(fields[4]) else { return nil }
    return make(day: fields[2], month: fields[1], year: year, time: fields[3])
  }

  private static func make(day: Substring, month: Substring, year: Int, time: Substring) -> Date? {
    let clock = time.split(separator: ":", omittingEmptySubsequences: false)
    guard let monthIndex = months.firstIndex(of: String(month)), clock.count == 3,
      day.count <= 2, let dayNumber = Int(day), (1...31).contains(dayNumber),
      clock.allSatisfy({ $0.count == 2 }),
      let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
      (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
    else { return nil }
    var parts = tm()
    parts.tm_year = Int32(year - 1900)
    parts.tm_mon = Int32(monthIndex)
    parts.tm_mday = Int32(dayNumber)
    parts.tm_hour = Int32(hour)
    parts.tm_min = Int32(minute)
    parts.tm_sec = Int32(second)
    return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
  }
}
