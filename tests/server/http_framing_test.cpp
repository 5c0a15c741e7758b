// Request framing as the connection gate reads it: where a head ends, what is refused with which
// status, and where a chunked body ends however its bytes arrive.
#include "server/http_framing.h"

#include <gtest/gtest.h>

namespace tandem::server {
namespace {

struct Parsed {
  HeadStatus status;
  RequestHead head;
  Refusal refusal;
};

Parsed parse(const std::string& data, size_t max_body = 1000) {
  Parsed p;
  p.status = parse_request_head(data, p.head, p.refusal);
  if (p.status == HeadStatus::kComplete) p.refusal = check_body_framing(p.head, max_body);
  return p;
}

TEST(HttpFraming, ReadsAHead) {
  Parsed p = parse("POST /v1/chat%2Fcompletions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length:  12 \r\n\r\n{...}");
  ASSERT_EQ(p.status, HeadStatus::kComplete);
  EXPECT_FALSE(p.refusal) << p.refusal.message;
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.path, "/v1/chat/completions");
  EXPECT_EQ(p.head.framing, BodyFraming::kLength);
  EXPECT_EQ(p.head.content_length, 12u);
  EXPECT_EQ(p.head.bytes, 75u);  // through the blank line, not the body
  EXPECT_EQ(parse("GET /health HTTP/1.0\r\n\r\n").head.framing, BodyFraming::kNone);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").head.framing, BodyFraming::kChunked);
}

TEST(HttpFraming, WaitsForTheRestOfAHead) {
  for (const char* part : {"", "GE", "GET /health HTTP/1.1", "GET /health HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\n\r"})
    EXPECT_EQ(parse(part).status, HeadStatus::kIncomplete) << part;
}

TEST(HttpFraming, RefusesWithTheStatusThatSaysWhy) {
  const std::string big_line = "GET /" + std::string(kMaxRequestLineBytes, 'a') + " HTTP/1.1\r\n\r\n";
  std::string flood = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i <= kMaxHeaderCount; ++i) flood += "X-A: b\r\n";
  const struct {
    std::string request;
    int status;
  } cases[] = {
      {"POST /v1/completions HTTP/1.1\r\n\r\n", 411},
      {"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\n", 415},
      {"POST / HTTP/1.1\r\nExpect: tea\r\nContent-Length: 1\r\n\r\n", 417},
      {big_line, 414},
      {"GET / HTTP/1.1\r\nX: " + std::string(kMaxHeadBytes, 'a'), 431},
      {flood + "\r\n", 431},
      {"GET / HTTP/1.1\nHost: x\n\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\n\n", 400},
      {"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX : a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\x01\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / FTP/1.0\r\n\r\n", 400},
      {"\x16\x03\x01\x02\r\n\r\n", 400},  // TLS to a plain port
  };
  for (const auto& c : cases) {
    Parsed p = parse(c.request);
    EXPECT_EQ(p.refusal.status, c.status) << c.request.substr(0, 80) << ": " << p.refusal.message;
    EXPECT_FALSE(p.refusal.message.empty());
    EXPECT_FALSE(p.refusal.code.empty());
  }
}

TEST(HttpFraming, FindsTheEndOfAChunkedBody) {
  const std::string body = "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\nNEXT";
  // Whole, and fed a byte at a time (the scanner resumes where it stopped).
  ChunkedScanner whole(1000);
  Refusal r;
  ASSERT_EQ(whole.scan(body, r), ChunkedScanner::Result::kDone);
  EXPECT_EQ(whole.end(), body.size() - 4);
  EXPECT_EQ(whole.decoded(), 9u);
  ChunkedScanner bytewise(1000);
  for (size_t n = 0; n < body.size() - 4; ++n)
    ASSERT_EQ(bytewise.scan(std::string_view(body).substr(0, n), r), ChunkedScanner::Result::kNeedMore) << n;
  EXPECT_EQ(bytewise.scan(body, r), ChunkedScanner::Result::kDone);
  EXPECT_EQ(bytewise.end(), whole.end());
}

TEST(HttpFraming, RefusesBadChunks) {
  const struct {
    std::string body;
    int status;
  } cases[] = {
      {"0x10\r\n", 400},  {"+5\r\n", 400},       {" 5\r\n", 400},         {"zz\r\n", 400},
      {"3e9\r\n", 413},   {"2\r\nabXY", 400},    {"0\r\nX-T: 1\r\n\r\n", 400},
      {std::string(kMaxChunkLineBytes + 2, '1'), 400},
  };
  for (const auto& c : cases) {
    ChunkedScanner s(1000);
    Refusal r;
    EXPECT_EQ(s.scan(c.body, r), ChunkedScanner::Result::kRefused) << c.body.substr(0, 40);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 40);
  }
}

}  // namespace
}  // namespace tandem::server
