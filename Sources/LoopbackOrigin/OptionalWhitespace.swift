extension StringProtocol {
  /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
  func trimmingOWS() -> Substring {
    let text = Substring(self)
    let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let start = text.firstIndex(where: { !isOWS($0) }),
      let end = text.lastIndex(where: { !isOWS($0) })
    else { return text[text.endIndex...] }
    return text[start...end]
  }
}
