// UTF-8 helpers with llama.cpp's exact leniency, and GPT-2's byte <-> printable-unicode mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces (1 for stray continuation bytes), as
// llama.cpp's unicode_len_utf8: SentencePiece splits text into symbols with it.
size_t utf8_sequence_length(uint8_t lead);

// Decodes UTF-8 the way llama.cpp does before pre-tokenizing: a malformed sequence becomes one
// U+FFFD per offending byte. Overlong forms and surrogates are accepted as they come.
std::vector<uint32_t> decode_utf8_lenient(std::string_view text);

// Appends the UTF-8 form of a code point (surrogates too; > U+10FFFF becomes U+FFFD).
void append_utf8(std::string& out, uint32_t cpt);

// GPT-2 byte-level BPE: every byte has a printable code point stand-in, so byte strings can be
// stored as text tokens ("Ġ" is the space byte).
const std::string& byte_to_unicode(uint8_t byte);
// Reverse mapping for one code point; -1 when the code point is no byte's stand-in.
int unicode_to_byte(uint32_t cpt);

}  // namespace tandem::tokenizer
