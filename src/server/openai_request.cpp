#include "server/openai_request.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <span>

#include "server/text_stream.h"

namespace tandem::server {
namespace {

using nlohmann::ordered_json;

// The deepest nesting of arrays and objects in `text`, outside strings (stops counting past `limit`).
int nesting_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Where in the document a parse stopped, as the field path a client knows ("messages[2].content"):
// a SAX pass over the body (run only once a parse failed) that keeps the path to the value being read.
class ErrorLocator {
 public:
  using json = ordered_json;
  bool null() { return value_done(); }
  bool boolean(bool) { return value_done(); }
  bool number_integer(json::number_integer_t) { return value_done(); }
  bool number_unsigned(json::number_unsigned_t) { return value_done(); }
  bool number_float(json::number_float_t, const std::string&) { return value_done(); }
  bool string(std::string&) { return value_done(); }
  bool binary(json::binary_t&) { return value_done(); }
  bool start_object(size_t) { return open(false); }
  bool start_array(size_t) { return open(true); }
  bool key(std::string& k) {
    frames_.back().key = k;
    frames_.back().in_value = true;
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  // The path of the value the parse was in when it failed ("" for the top level).
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.array) {
        p += "[" + std::to_string(f.done) + "]";
      } else if (f.in_value) {
        p += (p.empty() ? "" : ".") + f.key;
      }
    }
    return p;
  }

 private:
  struct Frame {
    bool array = false;
    size_t done = 0;  // elements read (arrays)
    std::string key;  // the member being read (objects), while in_value
    bool in_value = false;
  };
  bool open(bool array) {
    Frame f;
    f.array = array;
    frames_.push_back(std::move(f));
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value_done();
  }
  bool value_done() {
    if (frames_.empty()) return true;
    if (frames_.back().array) {
      ++frames_.back().done;
    } else {
      frames_.back().in_value = false;
    }
    return true;
  }
  std::vector<Frame> frames_;
};

// A parser message as text a JSON error object can carry: nlohmann quotes the bytes it last
// read, which may be the very bytes that are not UTF-8.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : valid_utf8(s)) {
    if (c < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

ApiError parse_failure(const std::string& body, const ordered_json::parse_error& e) {
  ErrorLocator locator;
  ordered_json::sax_parse(body, &locator);
  const std::string path = locator.path();
  const size_t at = e.byte > 0 ? e.byte - 1 : 0;  // e.byte counts the bytes read, the bad one last
  const std::string what = e.what();
  if (what.find("UTF-8") != std::string::npos && at < body.size()) {
    char detail[96];
    std::snprintf(detail, sizeof detail, " (byte 0x%02X at offset %zu of the body).",
                  unsigned(static_cast<unsigned char>(body[at])), at);
    return bad_request("Invalid '" + (path.empty() ? std::string("body") : path) +
                           "': the text is not valid UTF-8" + detail,
                       path, "invalid_utf8");
  }
  return bad_request("We could not parse the JSON body of your request" +
                         (path.empty() ? std::string() : " (in '" + path + "')") + ": " + printable(what),
                     path);
}

// An array member of the body that may hold at most `max` elements: counted while the body is
// parsed, so a request past it is refused before the rest is read into memory (an 8 MiB body of
// 200,000 messages: 0.3 s to parse whole, 40 ms to the 4097th message).
struct ArrayCap {
  const char* key;
  size_t max;
};
constexpr ArrayCap kChatCaps[] = {{"messages", kMaxMessages}, {"tools", kMaxTools}};

struct ArrayTooLong {
  const ArrayCap* cap;
};

struct TooManyKeys {
  bool one_object;  // one object past kMaxObjectKeys, else the sum past kMaxKeyComparisons
};

std::optional<ApiError> parse_body(const std::string& body, ordered_json& j, std::span<const ArrayCap> caps = {}) {
  if (nesting_depth(body, kMaxRequestDepth) > kMaxRequestDepth) {
    return bad_request("The JSON body nests deeper than " + std::to_string(kMaxRequestDepth) + " levels.");
  }
  try {
    // Depth 1: the top-level object's keys; depth 2: the elements of an array member.
    const ArrayCap* counting = nullptr;
    size_t elements = 0;
    // The keys so far of the object open at each depth, and the comparisons they have cost.
    std::vector<size_t> keys(size_t(kMaxRequestDepth) + 2, 0);
    size_t comparisons = 0;
    const auto count = [&](int depth, nlohmann::detail::parse_event_t event, ordered_json& parsed) {
      using E = nlohmann::detail::parse_event_t;
      const size_t d = std::min(size_t(depth), keys.size() - 2);
      if (event == E::object_start) keys[d + 1] = 0;
      if (event == E::key) {
        comparisons += keys[d]++;
        if (keys[d] > kMaxObjectKeys) throw TooManyKeys{true};
        if (comparisons > kMaxKeyComparisons) throw TooManyKeys{false};
      }
      if (depth == 1 && event == E::key) {
        counting = nullptr;
        elements = 0;
        for (const ArrayCap& c : caps)
          if (parsed == c.key) counting = &c;
      } else if (depth == 2 && counting && (event == E::object_start || event == E::array_start || event == E::value)) {
        if (++elements > counting->max) throw ArrayTooLong{counting};
      }
      return true;
    };
    j = ordered_json::parse(body, count);
  } catch (const TooManyKeys& e) {
    if (e.one_object)
      return bad_request("The JSON body has an object with more than " + std::to_string(kMaxObjectKeys) + " keys.",
                         "", "object_above_max_keys");
    return bad_request("The JSON body's objects have too many keys together (past " +
                           std::to_string(kMaxKeyComparisons) + " comparisons of a key with the keys before it).",
                       "", "object_above_max_keys");
  } catch (const ArrayTooLong& e) {
    return bad_request("Invalid '" + std::string(e.cap->key) +
                           "': array too long. Expected an array with maximum length " + std::to_string(e.cap->max) +
                           ", but got a longer one.",
                       e.cap->key, "array_above_max_length");
  } catch (const ordered_json::parse_error& e) {
    return parse_failure(body, e);
  } catch (const ordered_json::exception& e) {
    return bad_request("We could not parse the JSON body of your request: " + printable(e.what()));
  }
  if (!j.is_object()) return bad_request("The JSON body of your request must be an object.");
  return std::nullopt;
}

// A field that may be absent or null (then nothing happens), checked by `read`.
class Fields {
 public:
  explicit Fields(const ordered_json& j) : j_(j) {}
  const ordered_json* get(const char* name) const {
    auto it = j_.find(name);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<ApiError> boolean(const char* name, bool& out) const {
    if (const ordered_json* v = get(name)) {
      if (!v->is_boolean()) return invalid_type(name, "a boolean", *v);
      out = v->get<bool>();
    }
    return std::nullopt;
  }
  std::optional<ApiError> number(const char* name, double lo, double hi, float& out) const {
    if (const ordered_json* v = get(name)) {
      if (!v->is_number()) return invalid_type(name, "a decimal", *v);
      const double x = v->get<double>();
      if (!(x >= lo && x <= hi)) {
        return bad_request("Invalid '" + std::string(name) + "': " + v->dump() + " is outside [" + short_number(lo) +
                               ", " + short_number(hi) + "].",
                           name, "invalid_value");
      }
      out = float(x);
    }
    return std::nullopt;
  }
  std::optional<ApiError> integer(const char* name, int64_t lo, int64_t hi, int64_t& out) const {
    if (const ordered_json* v = get(name)) {
      if (!v->is_number_integer() && !v->is_number_unsigned()) return invalid_type(name, "an integer", *v);
      // JSON's non-negative integers read as unsigned (0 among them): compare each kind as itself.
      const bool fits = v->is_number_unsigned()
                            ? (lo <= 0 || v->get<uint64_t>() >= uint64_t(lo)) && v->get<uint64_t>() <= uint64_t(hi)
                            : v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
      if (!fits) {
        return bad_request("Invalid '" + std::string(name) + "': " + v->dump() + " is outside [" + std::to_string(lo) +
                               ", " + std::to_string(hi) + "].",
                           name, "invalid_value");
      }
      out = v->get<int64_t>();
    }
    return std::nullopt;
  }

 private:
  static std::string short_number(double x) {
    std::string s = std::to_string(x);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  const ordered_json& j_;
};

ApiError unsupported(const std::string& param, const std::string& why) {
  return bad_request("Unsupported parameter: '" + param + "' " + why, param, "unsupported_parameter");
}

// What both endpoints share: model, stream, sampling, stop, n and the fields tandem refuses.
std::optional<ApiError> parse_common(const ordered_json& j, const ServedModel& served, GenerationRequest& out) {
  const Fields f(j);
  if (const ordered_json* m = f.get("model")) {
    if (!m->is_string()) return invalid_type("model", "a string", *m);
    if (m->get<std::string>() != served.id) {
      ApiError e = bad_request("The model `" + m->get<std::string>() +
                                   "` does not exist or you do not have access to it. "
                                   "This server serves `" +
                                   served.id + "` (GET /v1/models).",
                               "model", "model_not_found");
      e.http_status = 404;
      return e;
    }
  }
  if (auto e = f.boolean("stream", out.stream)) return e;
  if (const ordered_json* so = f.get("stream_options")) {
    if (!so->is_object()) return invalid_type("stream_options", "an object", *so);
    if (auto e = Fields(*so).boolean("include_usage", out.include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  // max_completion_tokens is the newer name; either may be given.
  int64_t max_tokens = 0;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (auto e = f.integer(name, 1, INT32_MAX, max_tokens)) return e;
  }
  out.max_tokens = int(max_tokens);

  out.sampler = served.sampling;
  SamplerOptions& s = out.sampler;
  if (auto e = f.number("temperature", 0.0, 2.0, s.temperature)) return e;
  float top_p = s.top_p;
  if (auto e = f.number("top_p", 0.0, 1.0, top_p)) return e;
  if (top_p == 0.0f) {
    s.temperature = 0.0f;  // only the most likely token is left: greedy
  } else {
    s.top_p = top_p;
  }
  int64_t top_k = s.top_k;
  if (auto e = f.integer("top_k", 0, INT32_MAX, top_k)) return e;
  s.top_k = int(top_k);
  if (auto e = f.number("min_p", 0.0, 1.0, s.min_p)) return e;
  if (auto e = f.number("repeat_penalty", 1e-3, 100.0, s.repeat_penalty)) return e;
  if (const ordered_json* seed = f.get("seed")) {
    if (!seed->is_number_integer() && !seed->is_number_unsigned()) return invalid_type("seed", "an integer", *seed);
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(seed->get<int64_t>());
  } else if (served.random_seed) {
    static thread_local std::mt19937_64 draw{std::random_device{}()};
    s.seed = draw();
  }
  if (const ordered_json* stop = f.get("stop")) {
    constexpr size_t kMaxStops = 16;
    if (stop->is_string()) {
      out.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > kMaxStops) {
        return bad_request("Invalid 'stop': at most " + std::to_string(kMaxStops) + " stop sequences, got " +
                               std::to_string(stop->size()) + ".",
                           "stop", "invalid_value");
      }
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!(*stop)[i].is_string()) return invalid_type("stop[" + std::to_string(i) + "]", "a string", (*stop)[i]);
        out.stop.push_back((*stop)[i].get<std::string>());
      }
    } else {
      return invalid_type("stop", "a string or an array of strings", *stop);
    }
  }
  if (auto e = f.boolean("ignore_eos", out.ignore_eos)) return e;

  int64_t n = 1;
  if (auto e = f.integer("n", 1, 128, n)) return e;
  if (n != 1) return unsupported("n", "must be 1: tandem returns one choice per request.");
  int64_t best_of = 1;
  if (auto e = f.integer("best_of", 1, 128, best_of)) return e;
  if (best_of != 1) return unsupported("best_of", "must be 1.");
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    float v = 0;
    if (auto e = f.number(name, -2.0, 2.0, v)) return e;
    if (v != 0) return unsupported(name, "is not implemented (repeat_penalty is).");
  }
  if (const ordered_json* bias = f.get("logit_bias")) {
    if (!bias->is_object()) return invalid_type("logit_bias", "an object", *bias);
    if (!bias->empty()) return unsupported("logit_bias", "is not implemented.");
  }
  if (const ordered_json* lp = f.get("logprobs")) {
    if (!(lp->is_boolean() && !lp->get<bool>()) && !(lp->is_number_integer() && lp->get<int64_t>() == 0))
      return unsupported("logprobs", "is not implemented.");
  }
  if (const ordered_json* rf = f.get("response_format")) {
    if (!rf->is_object() || rf->value("type", std::string()) != "text")
      return unsupported("response_format",
                         "other than {\"type\": \"text\"} is not implemented (no constrained sampling).");
  }
  if (Status st = s.validate(); !st.ok()) return bad_request(st.message(), "", "invalid_value");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_chat_request(const std::string& body, const ServedModel& served, GenerationRequest& out) {
  ordered_json j;
  if (auto e = parse_body(body, j, kChatCaps)) return e;
  out = GenerationRequest{};
  out.chat = true;
  const ordered_json* messages = Fields(j).get("messages");
  if (!messages)
    return bad_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!messages->is_array()) return invalid_type("messages", "an array", *messages);
  if (messages->empty())
    return bad_request("Invalid 'messages': empty array. Expected at least one message.", "messages", "empty_array");
  ordered_json conv = {{"messages", *messages}};
  if (const ordered_json* tools = Fields(j).get("tools")) {
    if (!tools->is_array()) return invalid_type("tools", "an array", *tools);
    conv["tools"] = *tools;
  }
  if (const ordered_json* choice = Fields(j).get("tool_choice")) {
    if (!(choice->is_string() && (*choice == "none" || *choice == "auto")))
      return unsupported(
          "tool_choice",
          "other than \"none\" or \"auto\" is not implemented (the template sees the tools; the reply is text).");
  }
  Result<Conversation> c = Conversation::from_json(conv, "request");
  if (!c.ok()) return bad_request(c.status().message(), "messages", "invalid_value");
  out.conversation = std::move(c).value();
  return parse_common(j, served, out);
}

std::optional<ApiError> parse_completion_request(const std::string& body, const ServedModel& served,
                                                 GenerationRequest& out) {
  ordered_json j;
  if (auto e = parse_body(body, j)) return e;
  out = GenerationRequest{};
  out.chat = false;
  const ordered_json* prompt = Fields(j).get("prompt");
  if (!prompt) return bad_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  // A string, or its token ids; a list of one of them. Several prompts would be several choices.
  const ordered_json* one = prompt;
  if (prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() != 1)
      return unsupported("prompt",
                         "holds " + std::to_string(prompt->size()) + " prompts; tandem takes one per request.");
    one = &(*prompt)[0];
  }
  if (one->is_string()) {
    out.prompt = one->get<std::string>();
    if (out.prompt.empty()) return bad_request("Invalid 'prompt': empty string.", "prompt", "invalid_value");
  } else if (one->is_array()) {
    if (one->empty()) return bad_request("Invalid 'prompt': empty array.", "prompt", "invalid_value");
    for (size_t i = 0; i < one->size(); ++i) {
      const ordered_json& id = (*one)[i];
      if (!id.is_number_integer() && !id.is_number_unsigned())
        return invalid_type("prompt[" + std::to_string(i) + "]", "a token id (integer)", id);
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v > INT32_MAX)
        return bad_request("Invalid 'prompt': token id " + id.dump() + " is out of range.", "prompt", "invalid_value");
      out.prompt_ids.push_back(TokenId(v));
    }
    out.prompt_is_ids = true;
  } else {
    return invalid_type("prompt", "a string, an array of token ids, or a list of one of them", *prompt);
  }
  if (auto e = Fields(j).boolean("echo", out.echo)) return e;
  if (Fields(j).get("suffix")) return unsupported("suffix", "is not implemented.");
  return parse_common(j, served, out);
}

}  // namespace tandem::server
