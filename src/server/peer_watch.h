// Whether the client of a request has closed its connection, for handlers that wait (a queued or
// generating request) and would otherwise only notice when they write. cpp-httplib 0.11 (Debian
// 12's) gives a handler no socket, so the watch reads the kernel's table of TCP connections
// (/proc/net/tcp and tcp6): a connection the peer closed sits in CLOSE_WAIT, or is gone after a
// reset. Where the table cannot be read (or the connection is not found at the start), the watch
// says nothing, and the handler learns of a close when its next write fails.
#pragma once

#include <chrono>
#include <string>

namespace tandem::server {

class PeerWatch {
 public:
  // The connection between our local_port and the peer's remote_port.
  PeerWatch(int local_port, int remote_port);
  // True once the peer has closed (or reset) the connection; false while it is open or unknown.
  // Reads the table at most every kInterval (callers poll it in their wait loops); between reads
  // it answers what the last read found.
  bool peer_closed();

  static constexpr std::chrono::milliseconds kInterval{200};

 private:
  enum class State { kOpen, kClosed, kUnknown };
  State lookup() const;
  int local_port_, remote_port_;
  bool watching_;
  bool closed_ = false;
  std::chrono::steady_clock::time_point next_read_{};
};

}  // namespace tandem::server
