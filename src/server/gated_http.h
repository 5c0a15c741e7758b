// cpp-httplib's Server with the connection gate in front (connection_gate.h): accepted sockets
// wait in the gate until a whole request has arrived, and only then does a worker thread run
// cpp-httplib's request processing (routing, handlers, writing the response) over the bytes the
// gate read. Idle and slow connections hold no thread, framing errors never reach a handler.
//
// How: Server::process_and_close_socket(socket_t) is the private virtual that cpp-httplib's
// accept loop hands each socket to (its SSLServer overrides it too; overriding a private virtual
// is legal C++). Here it only gives the socket to the gate, and the accept loop's task queue runs
// it inline, so the accept thread never blocks on a client. The protected
// Server::process_request(Stream&, ...) then serves one request over GateStream, a Stream that
// reads from the gate's buffer and writes to the socket. Streaming answers (SSE) keep their
// worker while they stream, as before.
//
// Only this file and http_server.cpp include httplib.h.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/connection_gate.h"

namespace tandem::server {

// After a request this large, free memory goes back to the system (malloc_trim): glibc keeps
// what a big JSON document's many small nodes used in the worker thread's arena, so a burst of
// large requests (refused or not) left the server's RSS at a gigabyte and more for good.
inline constexpr size_t kTrimAfterRequestBytes = size_t(1) << 20;
// Most requests one connection is served before it is closed (announced as Keep-Alive: max).
inline constexpr int kMaxRequestsPerConnection = 1000;
// Writing an answer to a client that reads nothing fails after this long.
inline constexpr std::chrono::seconds kWriteTimeout{5};
// The listening socket's queue of connections not yet accepted (cpp-httplib's is 5).
inline constexpr int kListenBacklog = 512;

class GatedHttpServer : public httplib::Server {
 public:
  // workers: requests run at once (each complete; a stream holds its worker while it streams).
  GatedHttpServer(size_t max_body, int workers, ConnectionGate::Refused refused);
  ~GatedHttpServer() override;

  // Registers a handler with cpp-httplib and the route with the gate. A pattern is an exact path,
  // or a path ending in "(.+)" (any non-empty rest: /v1/models/(.+)); cpp-httplib matches it as
  // the std::regex it also is. (The gate does not build a std::regex itself: GCC 12 warns inside
  // <regex> under the sanitizers, and two patterns need none.)
  void get(const std::string& pattern, Handler h);
  void post(const std::string& pattern, Handler h);

  // On a worker, inside a handler: whether the client of the request being served has closed
  // its side (or reset). A poll of the socket itself, so it costs a syscall and sees a close at
  // once, where PeerWatch reads the kernel's connection table at most every 200 ms.
  static bool client_gone();

  bool bind(const std::string& host, int port, int& bound);  // port 0: any free port
  // Serves until shutdown(); then waits for the requests in flight and closes every connection.
  bool serve();
  void shutdown();

 private:
  bool process_and_close_socket(socket_t sock) override;
  void serve_one(GateConnection* c);
  void stop_workers();
  Refusal check_route(const std::string& method, const std::string& path) const;

  struct Route {
    std::string method;
    std::string path;  // the exact path, or the prefix before "(.+)"
    bool prefix = false;
    bool matches(const std::string& p) const {
      return prefix ? p.size() > path.size() && p.compare(0, path.size(), path) == 0 : p == path;
    }
  };
  static Route route_of(const std::string& method, const std::string& pattern);
  std::vector<Route> routes_;
  ConnectionGate gate_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::mutex workers_mu_;
  bool workers_stopped_ = false;
  std::atomic<bool> shutdown_requested_{false};
};

}  // namespace tandem::server
