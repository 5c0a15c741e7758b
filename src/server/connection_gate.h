// Where tandem serve's connections wait while they have no complete request: one thread and an
// epoll set own every such connection, so an idle or slow socket costs a file descriptor and a
// buffer, never a worker thread. (cpp-httplib 0.11 gives each accepted socket a pool thread that
// blocks in recv: 24 sockets that send nothing were enough to make /health wait 6-8 s.)
//
// The gate reads a request's head and its whole body into the connection's buffer under
// deadlines, refuses bad framing at once with the status that says why (http_framing.h) and an
// OpenAI-style error object, and only then hands the connection to `serve`, which runs the
// request on a worker and gives the connection back with release(). A keep-alive connection then
// waits here again for its next request (one already pipelined behind it is served at once).
//
// Limits, each a named constant below (docs/bad-input.md has the table):
//   idle (no byte of a request yet) kIdleTimeout     closed without a word
//   head not complete after         kHeadTimeout     408
//   body not complete after         kRequestTimeout  408 (counted from the request's first byte)
//   connections at once             kMaxConnections  when full, the oldest idle one is closed
//                                                    (no cap per peer: that locks out localhost)
//   request bodies held at once     kMaxHeldBodyBytes  503 with Retry-After past it
// A refused connection is closed after its answer: the answer is written, the sending side shut
// down, and what the client still sends is read and dropped for up to kLingerTimeout (closing at
// once would reset the connection and lose the answer while a big body is still on its way).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/http_framing.h"

namespace tandem::server {

inline constexpr std::chrono::seconds kIdleTimeout{5};
inline constexpr std::chrono::seconds kHeadTimeout{10};
inline constexpr std::chrono::seconds kRequestTimeout{60};
inline constexpr std::chrono::seconds kLingerTimeout{2};
inline constexpr size_t kMaxConnections = 1024;
inline constexpr size_t kMaxHeldBodyBytes = size_t(256) << 20;

// One client connection. The gate owns it; between serve() and release() a worker may read
// `in`, write to `fd` and count `requests`, and nothing else touches it.
struct GateConnection {
  int fd = -1;
  std::string in;           // received, not yet consumed: in[0, request_bytes) is the request handed over
  size_t request_bytes = 0;
  int requests = 0;         // served on this connection so far
  std::string local_ip, remote_ip;
  int local_port = 0, remote_port = 0;

 private:
  friend class ConnectionGate;
  enum class State { kIdle, kHead, kBody, kBusy, kLinger };
  uint64_t id = 0;
  State state = State::kIdle;
  std::chrono::steady_clock::time_point since;  // idle since, the request's first byte, or the linger's start
  RequestHead head;
  std::optional<ChunkedScanner> chunks;
  size_t held = 0;  // body bytes counted against kMaxHeldBodyBytes
  std::string out;  // a refusal not yet written
  bool read_closed = false;
};

class ConnectionGate {
 public:
  // Whether a path takes a method: no refusal, or 404 / 405 (with its Allow line).
  using RouteCheck = std::function<Refusal(const std::string& method, const std::string& path)>;
  // A complete request: run it elsewhere (this is the gate's thread; it must not block) and call
  // release() when done.
  using Serve = std::function<void(GateConnection*)>;
  // Each request the gate refused itself (for /metrics).
  using Refused = std::function<void(int status)>;

  ConnectionGate(size_t max_body, RouteCheck route, Serve serve, Refused refused);
  ~ConnectionGate();  // stop()
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  void start();
  // A socket accepted (any thread): the gate owns it from here.
  void add(int fd);
  // The worker is done with the request handed over: the connection waits for its next request,
  // or is closed (keep_alive false, or the gate stopping).
  void release(GateConnection* c, bool keep_alive);
  // Closes every connection no worker holds; ones that come back later are closed. Idempotent.
  void stop();
  bool stopping() const { return stopping_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  using State = GateConnection::State;

  void loop();
  void take_inbox();
  void accept_one(int fd);
  void resume(GateConnection* c);
  void on_event(GateConnection* c, uint32_t events);
  // Reads what the socket has (read_closed once the peer closed or failed).
  void read_some(GateConnection* c);
  // Moves c's request along: waits, refuses, or hands it over.
  void advance(GateConnection* c);
  void refuse_with(GateConnection* c, const Refusal& r);
  void flush(GateConnection* c);
  void close(GateConnection* c);
  void sweep(Clock::time_point now);
  bool evict_one();
  void watch(GateConnection* c, uint32_t events, bool first);

  const size_t max_body_;
  const size_t max_connections_;
  RouteCheck route_;
  Serve serve_;
  Refused refused_;
  std::vector<char> buffer_;  // what one recv() reads
  int epoll_ = -1, wake_ = -1;
  std::thread thread_;
  std::mutex join_mu_;
  std::atomic<bool> stopping_{false};

  // The gate thread's own (and, once it has ended, release()'s under mu_).
  std::unordered_map<uint64_t, std::unique_ptr<GateConnection>> connections_;
  uint64_t next_id_ = 1;
  size_t held_bytes_ = 0;
  Clock::time_point next_sweep_{};

  std::mutex mu_;  // the inbox and stopped_
  std::vector<int> added_;
  std::vector<std::pair<GateConnection*, bool>> released_;
  bool stopped_ = false;  // the gate thread has ended
};

}  // namespace tandem::server
