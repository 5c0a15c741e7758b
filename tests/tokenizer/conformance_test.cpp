// llama.cpp's test-tokenizer-0 on the shared vocab files: every input case of
// ggml-vocab-NAME.gguf.inp must tokenize (add_special = false, parse_special = false) to exactly
// the ids on the matching line of ggml-vocab-NAME.gguf.out.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_vocabs.h"

namespace tandem::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cases are separated by "\n__ggml_vocab_test__\n"; the text after the last separator (empty in
// the shipped files) is a case too only if non-empty, exactly as test-tokenizer-0 splits.
std::vector<std::string> split_inputs(const std::string& raw) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      cases.push_back(raw.substr(pos));
      break;
    }
    cases.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return cases;
}

std::vector<std::vector<TokenId>> read_outputs(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<TokenId>> lines;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::vector<TokenId> ids;
    for (long id; ss >> id;) ids.push_back(TokenId(id));
    lines.push_back(std::move(ids));
  }
  return lines;
}

std::string join(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id);
  }
  return s;
}

std::string printable(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else {
      s += c;
    }
  }
  return s;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesLlamaCpp) {
  const std::string name = GetParam();
  const std::string base = vocab_path(name);
  const std::vector<std::string> inputs = split_inputs(read_file(base + ".inp"));
  const std::vector<std::vector<TokenId>> expected = read_outputs(base + ".out");
  ASSERT_FALSE(inputs.empty()) << base << ".inp has no cases";
  ASSERT_EQ(inputs.size(), expected.size()) << "case count differs between .inp and .out";

  const Tokenizer* tok = load_vocab(name);
  ASSERT_NE(tok, nullptr);

  size_t passed = 0;
  std::string first_failure;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> got = tok->encode(inputs[i], /*add_special=*/false,
                                                 /*parse_special=*/false);
    if (got == expected[i]) {
      ++passed;
    } else if (first_failure.empty()) {
      first_failure = "case " + std::to_string(i) + " '" + printable(inputs[i]) +
                      "'\n  expected: " + join(expected[i]) + "\n  got:      " + join(got);
    }
  }
  std::printf("[ conformance ] %s: %zu/%zu\n", name.c_str(), passed, inputs.size());
  EXPECT_EQ(passed, inputs.size()) << first_failure;
}

INSTANTIATE_TEST_SUITE_P(VocabFiles, Conformance, ::testing::ValuesIn(conformance_vocabs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& c : id) {
                             if (c == '-') c = '_';
                           }
                           return id;
                         });

}  // namespace
}  // namespace tandem::testing
