#include "server/connection_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "server/openai_error.h"

namespace tandem::server {
namespace {

constexpr uint64_t kWakeId = 0;  // the eventfd's epoll key (connections count from 1)
// How often deadlines are checked (and so how late a timeout may fire at most).
constexpr int kSweepMs = 100;
constexpr size_t kReadChunk = 64 << 10;
// File descriptors kept free beside the connections (the model, logs, /proc reads, accept()).
constexpr size_t kSpareFds = 64;

// kMaxConnections, or fewer where the process may not open that many files.
size_t connection_cap() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kMaxConnections;
  const size_t files = size_t(r.rlim_cur);
  return std::clamp<size_t>(files > kSpareFds ? files - kSpareFds : 0, 16, kMaxConnections);
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    port = ntohs(v6.sin6_port);
  }
  ip = buf;
}

std::string response_for(const Refusal& r) {
  ApiError e;
  e.http_status = r.status;
  e.message = r.message;
  e.code = r.code;
  e.type = r.status >= 500 ? "server_error" : "invalid_request_error";
  const std::string body = json_text(e.to_json());
  return "HTTP/1.1 " + std::to_string(r.status) + " " + status_reason(r.status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n" + r.headers + "\r\n" + body;
}

}  // namespace

ConnectionGate::ConnectionGate(size_t max_body, RouteCheck route, Serve serve, Refused refused)
    : max_body_(max_body),
      max_connections_(connection_cap()),
      route_(std::move(route)),
      serve_(std::move(serve)),
      refused_(std::move(refused)),
      buffer_(kReadChunk) {
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
}

ConnectionGate::~ConnectionGate() {
  stop();
  for (auto& [id, c] : connections_) ::close(c->fd);
  ::close(wake_);
  ::close(epoll_);
}

void ConnectionGate::start() { thread_ = std::thread([this] { loop(); }); }

void ConnectionGate::add(int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      added_.push_back(fd);
      fd = -1;
    }
  }
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
}

void ConnectionGate::release(GateConnection* c, bool keep_alive) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      // No gate thread any more: close it here (the map is guarded by mu_ from now on).
      ::close(c->fd);
      connections_.erase(c->id);
      return;
    }
    released_.emplace_back(c, keep_alive);
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
}

void ConnectionGate::stop() {
  stopping_.store(true);
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
  std::lock_guard<std::mutex> lock(join_mu_);  // stop() may come from two threads at once
  if (thread_.joinable()) thread_.join();
}

void ConnectionGate::loop() {
  epoll_event events[64];
  while (!stopping_.load()) {
    const int n = epoll_wait(epoll_, events, 64, kSweepMs);
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kWakeId) {
        uint64_t count;
        while (::read(wake_, &count, sizeof count) > 0) {
        }
        take_inbox();
        continue;
      }
      auto it = connections_.find(id);
      if (it != connections_.end()) on_event(it->second.get(), events[i].events);
    }
    const Clock::time_point now = Clock::now();
    if (now >= next_sweep_) {
      sweep(now);
      next_sweep_ = now + std::chrono::milliseconds(kSweepMs);
    }
  }
  // Stopping: every connection here is closed; those with a worker close when it is done.
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  for (int fd : added_) ::close(fd);
  added_.clear();
  for (auto& [c, keep] : released_) c->state = State::kIdle;  // done with: closed below
  released_.clear();
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->second->state == State::kBusy) {
      ++it;
    } else {
      ::close(it->second->fd);
      it = connections_.erase(it);
    }
  }
}

void ConnectionGate::take_inbox() {
  std::vector<int> added;
  std::vector<std::pair<GateConnection*, bool>> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    added.swap(added_);
    released.swap(released_);
  }
  for (auto& [c, keep_alive] : released) {
    held_bytes_ -= c->held;
    c->held = 0;
    if (keep_alive && !stopping_.load()) {
      resume(c);
    } else {
      close(c);
    }
  }
  for (int fd : added) accept_one(fd);
}

void ConnectionGate::accept_one(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  // cpp-httplib writes an answer's head and body in two sends: with Nagle's algorithm the body
  // waited for the client's delayed ACK, 40 ms on every keep-alive request.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto c = std::make_unique<GateConnection>();
  c->fd = fd;
  c->id = next_id_++;
  c->since = Clock::now();
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, c->local_ip, c->local_port);
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, c->remote_ip, c->remote_port);
  GateConnection* raw = c.get();
  const bool full = connections_.size() >= max_connections_ && !evict_one();
  connections_.emplace(raw->id, std::move(c));
  watch(raw, EPOLLIN | EPOLLRDHUP, /*first=*/true);
  if (full) {
    refuse_with(raw, refuse(503,
                            "The server has " + std::to_string(max_connections_) +
                                " connections open, each with a request on its way: try again shortly.",
                            "too_many_connections", "Retry-After: 1\r\n"));
  }
}

// When full: the connection longest without a request is closed (a linger first, then an idle
// one, then one still sending its head: the slow sender a full table comes from).
bool ConnectionGate::evict_one() {
  for (State wanted : {State::kLinger, State::kIdle, State::kHead}) {
    GateConnection* oldest = nullptr;
    for (auto& [id, c] : connections_)
      if (c->state == wanted && (!oldest || c->since < oldest->since)) oldest = c.get();
    if (oldest) {
      close(oldest);
      return true;
    }
  }
  return false;
}

void ConnectionGate::watch(GateConnection* c, uint32_t events, bool first) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c->id;
  epoll_ctl(epoll_, first ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
}

void ConnectionGate::resume(GateConnection* c) {
  c->in = c->in.substr(c->request_bytes);  // a copy: an idle connection keeps no body-sized buffer
  c->request_bytes = 0;
  c->state = State::kIdle;
  c->since = Clock::now();
  c->chunks.reset();
  watch(c, EPOLLIN | EPOLLRDHUP, /*first=*/true);
  advance(c);  // a request pipelined behind the last one is served at once
}

void ConnectionGate::on_event(GateConnection* c, uint32_t events) {
  if (c->state == State::kBusy) return;  // (not watched while a worker has it)
  if (c->state == State::kLinger) {
    if (events & EPOLLOUT) flush(c);
    ssize_t n;
    while ((n = ::recv(c->fd, buffer_.data(), buffer_.size(), 0)) > 0) {
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || (events & EPOLLERR)) close(c);
    return;
  }
  if (events & EPOLLERR) {
    close(c);
    return;
  }
  read_some(c);
  advance(c);
}

void ConnectionGate::read_some(GateConnection* c) {
  // Never more than one request and a read ahead: a request is handed over once complete.
  const size_t cap = kMaxHeadBytes + max_body_ + kReadChunk;
  while (c->in.size() < cap) {
    const ssize_t n = ::recv(c->fd, buffer_.data(), buffer_.size(), 0);
    if (n > 0) {
      c->in.append(buffer_.data(), size_t(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) c->read_closed = true;
    break;
  }
}

void ConnectionGate::advance(GateConnection* c) {
  if (c->state == State::kIdle) {
    // Blank lines before a request line are ignored (RFC 9112 2.2).
    size_t blank = 0;
    while (blank + 1 < c->in.size() && c->in[blank] == '\r' && c->in[blank + 1] == '\n') blank += 2;
    c->in.erase(0, blank);
    if (!c->in.empty()) {
      c->state = State::kHead;
      c->since = Clock::now();
    }
  }
  if (c->state == State::kHead) {
    Refusal r;
    const HeadStatus s = parse_request_head(c->in, c->head, r);
    if (s == HeadStatus::kRefused) return refuse_with(c, r);
    if (s == HeadStatus::kComplete) {
      if (Refusal no_route = route_(c->head.method, c->head.path)) return refuse_with(c, no_route);
      if (Refusal bad = check_body_framing(c->head, max_body_)) return refuse_with(c, bad);
      const size_t body = c->head.framing == BodyFraming::kLength ? size_t(c->head.content_length) : 0;
      if (held_bytes_ + body > kMaxHeldBodyBytes) {
        return refuse_with(c, refuse(503,
                                     "The server is holding " + std::to_string(kMaxHeldBodyBytes >> 20) +
                                         " MiB of request bodies already: try again shortly.",
                                     "server_busy", "Retry-After: 1\r\n"));
      }
      c->held = body;
      held_bytes_ += body;
      if (c->head.framing == BodyFraming::kChunked) c->chunks.emplace(max_body_);
      if (!c->head.expect.empty()) {
        // The gate answers the expectation itself (the body must be here before a worker runs
        // the request); the line is renamed so cpp-httplib does not answer it a second time.
        const std::string renamed = "X-Tandem-Expect-Answered";
        c->in.replace(c->head.expect_offset, 6, renamed);
        c->head.bytes += renamed.size() - 6;
      }
      c->state = State::kBody;
      c->in.reserve(c->head.bytes + body);
    }
  }
  if (c->state == State::kBody) {
    size_t end = 0;
    if (c->chunks) {
      Refusal r;
      const auto s = c->chunks->scan(std::string_view(c->in).substr(c->head.bytes), r);
      const size_t decoded = size_t(c->chunks->decoded());
      held_bytes_ += decoded - c->held;
      c->held = decoded;
      if (s == ChunkedScanner::Result::kRefused) return refuse_with(c, r);
      if (held_bytes_ > kMaxHeldBodyBytes) {
        return refuse_with(c, refuse(503, "The server is holding too many request bodies: try again shortly.",
                                     "server_busy", "Retry-After: 1\r\n"));
      }
      if (s == ChunkedScanner::Result::kDone) end = c->head.bytes + c->chunks->end();
    } else if (c->in.size() >= c->head.bytes + c->held) {
      end = c->head.bytes + c->held;
    }
    if (end == 0) {
      if (c->read_closed) {
        return refuse_with(c, refuse(400, "The connection ended before the request's body did.", "malformed_request"));
      }
      if (!c->head.expect.empty()) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!::send(c->fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
        c->head.expect.clear();
      }
      return;
    }
    c->request_bytes = end;
    c->state = State::kBusy;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
    serve_(c);
    return;
  }
  if (c->read_closed) {
    // The client closed: between requests, nothing to say; inside a head, it cannot be answered.
    if (c->state == State::kHead && !c->in.empty())
      return refuse_with(c, refuse(400, "The connection ended before the request's head did.", "malformed_request"));
    close(c);
  }
}

void ConnectionGate::refuse_with(GateConnection* c, const Refusal& r) {
  if (refused_) refused_(r.status);
  held_bytes_ -= c->held;
  c->held = 0;
  c->state = State::kLinger;
  c->since = Clock::now();
  c->in.clear();
  c->in.shrink_to_fit();
  c->out = response_for(r);
  flush(c);
}

void ConnectionGate::flush(GateConnection* c) {
  while (!c->out.empty()) {
    const ssize_t n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c->out.erase(0, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      watch(c, EPOLLIN | EPOLLRDHUP | EPOLLOUT, false);
      return;
    }
    c->out.clear();  // the peer is gone: nothing more to say
  }
  ::shutdown(c->fd, SHUT_WR);
  watch(c, EPOLLIN | EPOLLRDHUP, false);
}

void ConnectionGate::close(GateConnection* c) {
  held_bytes_ -= c->held;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  connections_.erase(c->id);
}

void ConnectionGate::sweep(Clock::time_point now) {
  std::vector<GateConnection*> idle, slow_head, slow_body, lingered;
  for (auto& [id, c] : connections_) {
    const auto age = now - c->since;
    if (c->state == State::kIdle && age > kIdleTimeout) idle.push_back(c.get());
    if (c->state == State::kHead && age > kHeadTimeout) slow_head.push_back(c.get());
    if (c->state == State::kBody && age > kRequestTimeout) slow_body.push_back(c.get());
    if (c->state == State::kLinger && age > kLingerTimeout) lingered.push_back(c.get());
  }
  for (GateConnection* c : idle) close(c);
  for (GateConnection* c : lingered) close(c);
  for (GateConnection* c : slow_head) {
    refuse_with(c, refuse(408, "The request's head did not arrive within " + std::to_string(kHeadTimeout.count()) +
                                   " s.",
                          "request_timeout"));
  }
  for (GateConnection* c : slow_body) {
    refuse_with(c, refuse(408, "The request did not arrive whole within " + std::to_string(kRequestTimeout.count()) +
                                   " s.",
                          "request_timeout"));
  }
}

}  // namespace tandem::server
