// HTTP/1.1 request framing, read strictly before a request reaches cpp-httplib: where a request's
// head ends, whether its request line and header lines are well-formed, and where its body ends
// (Content-Length or chunked). The connection gate (connection_gate.h) runs these over the bytes a
// connection has sent so far, so a malformed or oversized request is refused at once with the
// status that says why, and a handler thread only ever sees a request whose every byte is here.
//
// Stricter than cpp-httplib on purpose: where the two would read a request differently (a bare
// LF, a folded header, Content-Length beside Transfer-Encoding, "0x10" as a chunk size) the
// request is refused, because two readings of one byte stream is how request smuggling starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::server {

// Each limit is one named constant (docs/bad-input.md lists them with their statuses).
inline constexpr size_t kMaxRequestLineBytes = 8 << 10;  // 414 past it (cpp-httplib's own URI limit)
inline constexpr size_t kMaxHeadBytes = 32 << 10;        // request line and headers: 431 past it
inline constexpr size_t kMaxHeaderCount = 100;           // 431 past it
inline constexpr size_t kMaxChunkLineBytes = 1024;       // a chunk's size line, extensions and all: 400

// Why a request is refused before a handler sees it: the status and OpenAI-style error fields.
struct Refusal {
  int status = 0;  // 0: not refused
  std::string message;
  std::string code;
  std::string headers;  // extra response header lines, each ending in \r\n (Allow, Retry-After)

  explicit operator bool() const { return status != 0; }
};

Refusal refuse(int status, std::string message, std::string code, std::string headers = "");

enum class BodyFraming { kNone, kLength, kChunked };

// What the gate needs of a request head; cpp-httplib reads the same bytes again for the handler.
struct RequestHead {
  size_t bytes = 0;  // through the blank line that ends it
  std::string method, target, version;
  std::string path;  // the target before '?', percent-decoded (what routes match)
  // Facts of the header lines, checked by check_body_framing once the route is known.
  int content_lengths = 0;  // Content-Length lines
  uint64_t content_length = 0;
  bool length_conflict = false;  // Content-Length lines that disagree
  std::string transfer_encoding, content_encoding, expect;  // lower-cased, "" when absent
  size_t expect_offset = 0;  // where the Expect line's name starts (the gate answers 100-continue)
  // After check_body_framing.
  BodyFraming framing = BodyFraming::kNone;
};

enum class HeadStatus { kIncomplete, kComplete, kRefused };

// Reads the head at the start of `data` (every byte the connection sent so far): kIncomplete
// while it has not ended and is within the limits, kComplete with `head` filled, or kRefused with
// `refusal` (400 malformed, 414, 431, 505).
HeadStatus parse_request_head(std::string_view data, RequestHead& head, Refusal& refusal);

// The body's framing, refused where it is wrong: 400 (Content-Length invalid or beside
// Transfer-Encoding), 411 (a POST, PUT or PATCH with neither), 413 (past max_body), 415 (a
// Content-Encoding: cpp-httplib would inflate a gzip body past any limit), 417 (an Expect other
// than 100-continue), 501 (a Transfer-Encoding other than chunked). Sets head.framing.
Refusal check_body_framing(RequestHead& head, size_t max_body);

// Finds the end of a chunked body as its bytes arrive (called again with the same bytes and more).
class ChunkedScanner {
 public:
  enum class Result { kNeedMore, kDone, kRefused };
  explicit ChunkedScanner(size_t max_body) : max_body_(max_body) {}

  // `body`: every byte after the head received so far. kDone: end() is the body's length.
  Result scan(std::string_view body, Refusal& refusal);
  size_t end() const { return pos_; }
  uint64_t decoded() const { return decoded_; }  // the chunks' bytes so far

 private:
  enum class State { kSize, kData, kDataEnd, kLast };
  size_t max_body_;
  State state_ = State::kSize;
  size_t pos_ = 0;  // scanned so far
  uint64_t remaining_ = 0;
  uint64_t decoded_ = 0;
};

// The reason phrase of the statuses a response may carry ("Not Found"; "" for others).
const char* status_reason(int status);

}  // namespace tandem::server
