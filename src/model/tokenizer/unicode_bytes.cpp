#include "model/tokenizer/unicode_bytes.h"

#include <array>

namespace tandem::tokenizer {

size_t utf8_sequence_length(uint8_t lead) {
  static constexpr std::array<uint8_t, 16> kByHighNibble = {1, 1, 1, 1, 1, 1, 1, 1,
                                                            1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

namespace {

bool is_continuation(std::string_view s, size_t i) {
  return i < s.size() && (uint8_t(s[i]) & 0xC0) == 0x80;
}

// One code point starting at `offset`, or nullopt-like false when the sequence is malformed.
bool decode_one(std::string_view s, size_t& offset, uint32_t& cpt) {
  const uint8_t b0 = uint8_t(s[offset]);
  if (!(b0 & 0x80)) {
    cpt = b0;
    offset += 1;
    return true;
  }
  if (!(b0 & 0x40)) return false;  // stray continuation byte
  if (!(b0 & 0x20)) {
    if (!is_continuation(s, offset + 1)) return false;
    cpt = ((b0 & 0x1Fu) << 6) | (uint8_t(s[offset + 1]) & 0x3Fu);
    offset += 2;
    return true;
  }
  if (!(b0 & 0x10)) {
    if (!is_continuation(s, offset + 1) || !is_continuation(s, offset + 2)) return false;
    cpt = ((b0 & 0x0Fu) << 12) | ((uint8_t(s[offset + 1]) & 0x3Fu) << 6) |
          (uint8_t(s[offset + 2]) & 0x3Fu);
    offset += 3;
    return true;
  }
  if (!(b0 & 0x08)) {
    if (!is_continuation(s, offset + 1) || !is_continuation(s, offset + 2) ||
        !is_continuation(s, offset + 3)) {
      return false;
    }
    cpt = ((b0 & 0x07u) << 18) | ((uint8_t(s[offset + 1]) & 0x3Fu) << 12) |
          ((uint8_t(s[offset + 2]) & 0x3Fu) << 6) | (uint8_t(s[offset + 3]) & 0x3Fu);
    offset += 4;
    return true;
  }
  return false;
}

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> from_unicode;  // every stand-in code point is below 0x144

  ByteTables() {
    from_unicode.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the others take code points from U+0100 on,
    // in byte order (the mapping GPT-2's encoder.py defines).
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next_extra = 0;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cpt = printable(b) ? uint32_t(b) : uint32_t(256 + next_extra++);
      append_utf8(to_unicode[b], cpt);
      from_unicode[cpt] = int16_t(b);
    }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

std::vector<uint32_t> decode_utf8_lenient(std::string_view text) {
  std::vector<uint32_t> cpts;
  cpts.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cpt = 0;
    if (decode_one(text, offset, cpt)) {
      cpts.push_back(cpt);
    } else {
      cpts.push_back(kReplacementChar);
      ++offset;
    }
  }
  return cpts;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt > 0x10FFFF) cpt = kReplacementChar;
  if (cpt <= 0x7F) {
    out.push_back(char(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(char(0xC0 | (cpt >> 6)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(char(0xE0 | (cpt >> 12)));
    out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cpt >> 18)));
    out.push_back(char(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cpt & 0x3F)));
  }
}

const std::string& byte_to_unicode(uint8_t byte) { return byte_tables().to_unicode[byte]; }

int unicode_to_byte(uint32_t cpt) {
  return cpt < byte_tables().from_unicode.size() ? byte_tables().from_unicode[cpt] : -1;
}

}  // namespace tandem::tokenizer
