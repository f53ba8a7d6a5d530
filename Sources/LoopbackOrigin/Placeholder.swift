/// Placeholder until the loopback origin lands.
enum LoopbackOriginPlaceholder {}
