#include "server/peer_watch.h"

#include <cstdio>
#include <cstring>

namespace tandem::server {
namespace {

// /proc/net/tcp's st column: 01 ESTABLISHED, 08 CLOSE_WAIT (the peer sent FIN), 07 CLOSE.
constexpr unsigned kEstablished = 0x01, kClose = 0x07, kCloseWait = 0x08;

// The state of the connection local_port <-> remote_port in one table file; -1 when absent
// (or the file unreadable: *readable false).
int state_in(const char* path, int local_port, int remote_port, bool* readable) {
  FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  *readable = true;
  char line[512];
  int state = -1;
  if (!std::fgets(line, sizeof line, f)) {  // the header
    std::fclose(f);
    return -1;
  }
  while (std::fgets(line, sizeof line, f)) {
    // "  sl  local_address rem_address   st ...": addresses as HEX:PORT (the port in hex).
    char local[64], remote[64];
    unsigned st = 0;
    if (std::sscanf(line, "%*s %63s %63s %x", local, remote, &st) != 3) continue;
    const char* lp = std::strrchr(local, ':');
    const char* rp = std::strrchr(remote, ':');
    if (!lp || !rp) continue;
    if (int(std::strtol(lp + 1, nullptr, 16)) != local_port || int(std::strtol(rp + 1, nullptr, 16)) != remote_port)
      continue;
    state = int(st);
    if (st == kEstablished) break;  // an open connection on these ports wins over a stale entry
  }
  std::fclose(f);
  return state;
}

}  // namespace

PeerWatch::PeerWatch(int local_port, int remote_port)
    : local_port_(local_port), remote_port_(remote_port), watching_(false) {
  // Watch only a connection the table shows open now; anything else would read as closed.
  watching_ = local_port > 0 && remote_port > 0 && lookup() == State::kOpen;
}

PeerWatch::State PeerWatch::lookup() const {
  bool readable = false;
  int st = state_in("/proc/net/tcp", local_port_, remote_port_, &readable);
  if (st < 0) st = state_in("/proc/net/tcp6", local_port_, remote_port_, &readable);
  if (!readable) return State::kUnknown;
  if (st < 0 || st == int(kCloseWait) || st == int(kClose)) return State::kClosed;
  return State::kOpen;
}

bool PeerWatch::peer_closed() {
  if (!watching_ || closed_) return closed_;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_read_) return false;
  next_read_ = now + kInterval;
  closed_ = lookup() == State::kClosed;
  return closed_;
}

}  // namespace tandem::server
