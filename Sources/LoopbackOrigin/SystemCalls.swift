#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// POSIX calls under names that do not clash with this module's methods (`Socket.listen`,
// `Resource.open`, ...).

/// `open(2)`.
func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }

/// `close(2)`.
func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }

/// `listen(2)`.
func systemListen(_ descriptor: Int32, _ backlog: Int32) -> Int32 { listen(descriptor, backlog) }

/// `accept(2)` without the peer address.
func systemAccept(_ descriptor: Int32) -> Int32 { accept(descriptor, nil, nil) }

/// `send(2)`.
func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32)
  -> Int
{ send(descriptor, bytes, count, flags) }
