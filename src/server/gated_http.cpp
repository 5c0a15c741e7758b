#include "server/gated_http.h"

#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tandem::server {
namespace {

// The connection whose request this worker thread is serving (client_gone() reads it).
thread_local const GateConnection* t_serving = nullptr;

// cpp-httplib's accept loop enqueues process_and_close_socket per socket; run inline, it only
// registers the socket with the gate.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// One request's bytes from the gate's buffer, the answer to the socket.
class GateStream final : public httplib::Stream {
 public:
  GateStream(GateConnection& c, const ConnectionGate& gate) : c_(c), gate_(gate) {}

  bool is_readable() const override { return pos_ < c_.request_bytes; }
  // Before each piece of a streamed answer: writable within the timeout, and the peer not gone.
  bool is_writable() const override { return wait_writable() && peer_open(); }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, c_.request_bytes - pos_);
    std::memcpy(ptr, c_.in.data() + pos_, n);
    pos_ += n;
    return ssize_t(n);  // 0 past the request: cpp-httplib reads no further than its framing says
  }
  ssize_t write(const char* ptr, size_t size) override {
    while (true) {
      const ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
      if (n > 0) return n;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_writable()) continue;
      return -1;  // never 0: cpp-httplib's write loop would spin on it
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.remote_ip;
    port = c_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.local_ip;
    port = c_.local_port;
  }
  socket_t socket() const override { return c_.fd; }

 private:
  // Polls in short slices so a stopping server does not wait out kWriteTimeout per client.
  bool wait_writable() const {
    const auto until = std::chrono::steady_clock::now() + kWriteTimeout;
    while (true) {
      pollfd p{c_.fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, 100);
      if (r > 0) return (p.revents & (POLLERR | POLLNVAL)) == 0;
      if (r < 0 && errno != EINTR) return false;
      if (gate_.stopping() || std::chrono::steady_clock::now() >= until) return false;
    }
  }
  bool peer_open() const {
    pollfd p{c_.fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    char b;
    return ::recv(c_.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;  // 0: the peer closed
  }

  GateConnection& c_;
  const ConnectionGate& gate_;
  size_t pos_ = 0;
};

}  // namespace

GatedHttpServer::GatedHttpServer(size_t max_body, int workers, ConnectionGate::Refused refused)
    : gate_(
          max_body, [this](const std::string& m, const std::string& p) { return check_route(m, p); },
          [this](GateConnection* c) { workers_->enqueue([this, c] { serve_one(c); }); }, std::move(refused)),
      workers_(std::make_unique<httplib::ThreadPool>(size_t(std::max(workers, 1)))) {
  new_task_queue = [] { return new InlineQueue; };
  set_payload_max_length(max_body);  // the gate refuses more first; this is cpp-httplib's own check
  set_keep_alive_timeout(kIdleTimeout.count());   // announced in Keep-Alive: timeout=5, max=...
  set_keep_alive_max_count(size_t(kMaxRequestsPerConnection));
  // Buffers of a request body's size are mapped and unmapped whole: glibc's default raises its
  // mmap threshold to the largest block freed so far, after which every body and its copies land
  // in (and stay with) a worker thread's arena.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  // cpp-httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port
  // and silently take half its connections: only SO_REUSEADDR (a restart can rebind at once).
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
  });
  gate_.start();
}

GatedHttpServer::~GatedHttpServer() {
  shutdown();
  stop_workers();
}

void GatedHttpServer::stop_workers() {
  std::lock_guard<std::mutex> lock(workers_mu_);
  if (workers_stopped_) return;
  workers_stopped_ = true;
  workers_->shutdown();  // runs what is queued (each handler sees the server stopping), joins
}

GatedHttpServer::Route GatedHttpServer::route_of(const std::string& method, const std::string& pattern) {
  static const std::string kRest = "(.+)";
  Route r;
  r.method = method;
  r.prefix = pattern.size() > kRest.size() && pattern.compare(pattern.size() - kRest.size(), kRest.size(), kRest) == 0;
  r.path = r.prefix ? pattern.substr(0, pattern.size() - kRest.size()) : pattern;
  return r;
}

void GatedHttpServer::get(const std::string& pattern, Handler h) {
  routes_.push_back(route_of("GET", pattern));
  Get(pattern, std::move(h));
}

void GatedHttpServer::post(const std::string& pattern, Handler h) {
  routes_.push_back(route_of("POST", pattern));
  Post(pattern, std::move(h));
}

Refusal GatedHttpServer::check_route(const std::string& method, const std::string& path) const {
  std::string allow;
  for (const Route& r : routes_) {
    if (!r.matches(path)) continue;
    if (method == r.method || (method == "HEAD" && r.method == "GET")) return {};
    if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
    if (r.method == "GET" && allow.find("HEAD") == std::string::npos) allow += ", HEAD";
  }
  if (!allow.empty()) {
    return refuse(405, "The method " + method + " is not allowed for " + path + " (allowed: " + allow + ").",
                  "method_not_allowed", "Allow: " + allow + "\r\n");
  }
  return refuse(404, "Unknown request URL: " + method + " " + path + ".", "unknown_url");
}

bool GatedHttpServer::client_gone() {
  if (!t_serving) return false;
  pollfd p{t_serving->fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool GatedHttpServer::bind(const std::string& host, int port, int& bound) {
  if (port == 0) {
    bound = bind_to_any_port(host);
    if (bound < 0) return false;
  } else {
    if (!bind_to_port(host, port)) return false;
    bound = port;
  }
  ::listen(svr_sock_, kListenBacklog);  // Linux takes a second listen() as a new backlog
  return true;
}

bool GatedHttpServer::serve() {
  const bool ok = listen_after_bind();
  // The accept loop has ended (shutdown): no new request starts a worker once the gate stops, and
  // the requests in flight end (their handlers see the server stopping) before this returns.
  gate_.stop();
  stop_workers();
  return ok || shutdown_requested_.load();
}

void GatedHttpServer::shutdown() {
  shutdown_requested_.store(true);
  // Server::stop() closes the listening socket only once listen() runs; shut down before that,
  // the socket makes the accept loop end as soon as it starts.
  const socket_t listening = svr_sock_.load();
  stop();
  if (listening != INVALID_SOCKET && svr_sock_.load() != INVALID_SOCKET) ::shutdown(listening, SHUT_RDWR);
  gate_.stop();
}

bool GatedHttpServer::process_and_close_socket(socket_t sock) {
  gate_.add(sock);
  return true;
}

void GatedHttpServer::serve_one(GateConnection* c) {
  GateStream stream(*c, gate_);
  const bool last = ++c->requests >= kMaxRequestsPerConnection || gate_.stopping();
  bool closed_by_request = false;  // Connection: close, or HTTP/1.0 without keep-alive
  t_serving = c;
  const bool ok = process_request(stream, last, closed_by_request, nullptr);
  t_serving = nullptr;
  const bool big = c->request_bytes >= kTrimAfterRequestBytes;
  gate_.release(c, ok && !last && !closed_by_request);
  if (big) malloc_trim(0);  // the request's memory is free by now
}

}  // namespace tandem::server
