#include "server/http_framing.h"

#include <algorithm>

namespace tandem::server {
namespace {

// RFC 9110's tchar: what a method or a header name is made of.
bool token_char(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(char(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), token_char); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return out;
}

bool same_name(std::string_view a, std::string_view b) { return a.size() == b.size() && lower(a) == lower(b); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

// %XX decoded, as cpp-httplib decodes a path before it matches routes.
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += char(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

Refusal malformed(const std::string& what) {
  return refuse(400, "Malformed HTTP request: " + what + ".", "malformed_request");
}

// Header values may hold visible characters, spaces, tabs and obs-text; never other controls
// (a NUL, a lone CR).
bool valid_value(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char ch) {
    const unsigned char c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\t') || c == 0x7F;
  });
}

HeadStatus refused(Refusal& out, Refusal r) {
  out = std::move(r);
  return HeadStatus::kRefused;
}

}  // namespace

Refusal refuse(int status, std::string message, std::string code, std::string headers) {
  Refusal r;
  r.status = status;
  r.message = std::move(message);
  r.code = std::move(code);
  r.headers = std::move(headers);
  return r;
}

HeadStatus parse_request_head(std::string_view data, RequestHead& head, Refusal& refusal) {
  const Refusal too_long_line = refuse(
      414, "The request line is longer than " + std::to_string(kMaxRequestLineBytes) + " bytes.", "uri_too_long");
  const Refusal too_long_head = refuse(
      431, "The request's header lines are longer than " + std::to_string(kMaxHeadBytes) + " bytes.",
      "headers_too_large");
  // A head whose lines end in a bare LF would never end here: refused, not waited for.
  const auto bare_lf = [&] {
    for (size_t i = 0; i < data.size(); ++i)
      if (data[i] == '\n' && (i == 0 || data[i - 1] != '\r')) return true;
    return false;
  };
  const size_t line_end = data.find("\r\n");
  if (line_end == std::string_view::npos) {
    if (data.size() > kMaxRequestLineBytes) return refused(refusal, too_long_line);
    if (bare_lf()) return refused(refusal, malformed("a line ends in LF, not CRLF"));
    return HeadStatus::kIncomplete;
  }
  if (line_end > kMaxRequestLineBytes) return refused(refusal, too_long_line);
  const size_t end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (data.size() >= kMaxHeadBytes) return refused(refusal, too_long_head);
    if (bare_lf()) return refused(refusal, malformed("a line ends in LF, not CRLF"));
    return HeadStatus::kIncomplete;
  }
  if (end + 4 > kMaxHeadBytes) return refused(refusal, too_long_head);
  head = RequestHead{};
  head.bytes = end + 4;

  // The request line: METHOD SP TARGET SP HTTP/1.x, single spaces.
  const std::string_view line = data.substr(0, line_end);
  const size_t sp1 = line.find(' '), sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refused(refusal, malformed("the request line is not 'METHOD TARGET HTTP/1.1'"));
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method)) return refused(refusal, malformed("the method is not a token"));
  if (target.empty() || !(target[0] == '/' || target == "*") ||
      std::any_of(target.begin(), target.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7F; }))
    return refused(refusal, malformed("the target is not a path ('/...')"));
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.')
      return refused(refusal, refuse(505, "Only HTTP/1.0 and HTTP/1.1 are served, not " + std::string(version) + ".",
                                     "http_version_not_supported"));
    return refused(refusal, malformed("the version is not HTTP/1.1"));
  }
  head.method = method;
  head.target = target;
  head.version = version;
  head.path = percent_decoded(target.substr(0, target.find('?')));

  // Header lines: NAME ":" OWS VALUE OWS, one per CRLF line.
  size_t count = 0;
  for (size_t at = line_end + 2; at < end + 2;) {
    const size_t eol = data.find("\r\n", at);
    const std::string_view h = data.substr(at, eol - at);
    const size_t offset = at;
    at = eol + 2;
    if (++count > kMaxHeaderCount) {
      return refused(refusal, refuse(431, "The request has more than " + std::to_string(kMaxHeaderCount) +
                                              " header lines.",
                                     "headers_too_large"));
    }
    if (h.find('\n') != std::string_view::npos) return refused(refusal, malformed("a line ends in LF, not CRLF"));
    if (h[0] == ' ' || h[0] == '\t') return refused(refusal, malformed("a header line is folded (starts with a space)"));
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || !is_token(h.substr(0, colon)))
      return refused(refusal, malformed("a header line is not 'Name: value'"));
    const std::string_view name = h.substr(0, colon), value = trim(h.substr(colon + 1));
    if (!valid_value(value)) return refused(refusal, malformed("a header value holds a control character"));
    if (same_name(name, "content-length")) {
      if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), [](char c) {
            return c >= '0' && c <= '9';
          })) {
        return refused(refusal, refuse(400, "Invalid Content-Length: '" + std::string(value.substr(0, 40)) +
                                                "' (a number of bytes, at most 18 digits).",
                                       "invalid_content_length"));
      }
      const uint64_t n = std::stoull(std::string(value));
      if (head.content_lengths++ > 0 && n != head.content_length) head.length_conflict = true;
      head.content_length = n;
    } else if (same_name(name, "transfer-encoding")) {
      head.transfer_encoding += (head.transfer_encoding.empty() ? "" : ", ") + lower(value);
    } else if (same_name(name, "content-encoding")) {
      head.content_encoding += (head.content_encoding.empty() ? "" : ", ") + lower(value);
    } else if (same_name(name, "expect")) {
      head.expect = lower(value);
      head.expect_offset = offset;
    }
  }
  return HeadStatus::kComplete;
}

Refusal check_body_framing(RequestHead& head, size_t max_body) {
  if (head.length_conflict) {
    return refuse(400, "The request has Content-Length lines that disagree.", "invalid_content_length");
  }
  const bool chunked = !head.transfer_encoding.empty();
  if (chunked && head.content_lengths > 0) {
    return refuse(400, "The request has both Content-Length and Transfer-Encoding (which one frames the body?).",
                  "invalid_content_length");
  }
  if (chunked && head.transfer_encoding != "chunked") {
    return refuse(501, "Transfer-Encoding '" + head.transfer_encoding.substr(0, 40) +
                           "' is not supported: send Content-Length or Transfer-Encoding: chunked.",
                  "unsupported_transfer_encoding");
  }
  if (!head.content_encoding.empty() && head.content_encoding != "identity") {
    return refuse(415, "Content-Encoding '" + head.content_encoding.substr(0, 40) +
                           "' is not supported: send the body uncompressed.",
                  "unsupported_content_encoding");
  }
  if (!head.expect.empty() && head.expect != "100-continue") {
    return refuse(417, "Expect: '" + head.expect.substr(0, 40) + "' is not supported (only 100-continue).",
                  "expectation_failed");
  }
  if (head.content_length > max_body) {
    return refuse(413, "The request body is " + std::to_string(head.content_length) + " bytes, larger than the " +
                           std::to_string(max_body) + " bytes this server takes.",
                  "request_too_large");
  }
  if (chunked) {
    head.framing = BodyFraming::kChunked;
  } else if (head.content_lengths > 0) {
    head.framing = head.content_length > 0 ? BodyFraming::kLength : BodyFraming::kNone;
  } else if (head.method == "POST" || head.method == "PUT" || head.method == "PATCH") {
    // cpp-httplib would read such a body until the client closes: the connection hung.
    return refuse(411, "A " + head.method + " request needs a Content-Length (or Transfer-Encoding: chunked).",
                  "length_required");
  } else {
    head.framing = BodyFraming::kNone;
  }
  return {};
}

ChunkedScanner::Result ChunkedScanner::scan(std::string_view body, Refusal& refusal) {
  const auto fail = [&](Refusal r) {
    refusal = std::move(r);
    return Result::kRefused;
  };
  while (true) {
    switch (state_) {
      case State::kSize: {
        const size_t eol = body.find("\r\n", pos_);
        if (eol == std::string_view::npos || eol - pos_ > kMaxChunkLineBytes) {
          if (std::min(eol, body.size()) - pos_ > kMaxChunkLineBytes)
            return fail(malformed("a chunk size line is longer than " + std::to_string(kMaxChunkLineBytes) + " bytes"));
          return Result::kNeedMore;
        }
        // HEXDIGITS [; extensions]: the size alone, no sign, space or 0x (cpp-httplib's strtoul
        // would take those).
        const std::string_view line = body.substr(pos_, eol - pos_);
        const size_t digits = std::min(line.find(';'), line.size());
        if (digits == 0 || digits > 15 ||
            !std::all_of(line.begin(), line.begin() + long(digits), [](char c) { return hex_value(c) >= 0; }))
          return fail(malformed("a chunk size is not a hexadecimal number"));
        uint64_t size = 0;
        for (size_t i = 0; i < digits; ++i) size = size * 16 + uint64_t(hex_value(line[i]));
        if (decoded_ + size > max_body_) {
          return fail(refuse(413, "The request body is larger than the " + std::to_string(max_body_) +
                                      " bytes this server takes.",
                             "request_too_large"));
        }
        pos_ = eol + 2;
        remaining_ = size;
        decoded_ += size;
        state_ = size == 0 ? State::kLast : State::kData;
        break;
      }
      case State::kData: {
        const size_t take = size_t(std::min<uint64_t>(remaining_, body.size() - pos_));
        pos_ += take;
        remaining_ -= take;
        if (remaining_ > 0) return Result::kNeedMore;
        state_ = State::kDataEnd;
        break;
      }
      case State::kDataEnd:
      case State::kLast:
        if (body.size() - pos_ < 2) return Result::kNeedMore;
        if (body.substr(pos_, 2) != "\r\n") {
          // After the last chunk, trailer fields: cpp-httplib refuses them too (so does this, clearly).
          return fail(state_ == State::kLast ? refuse(400, "Chunked trailer fields are not supported.", "malformed_request")
                                             : malformed("a chunk's data does not end in CRLF"));
        }
        pos_ += 2;
        if (state_ == State::kLast) return Result::kDone;
        state_ = State::kSize;
        break;
    }
  }
}

const char* status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

}  // namespace tandem::server
