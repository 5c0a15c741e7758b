// libFuzzer target for the compile cache's untrusted inputs: manifest.json (read by `tandem run
// --npu-cache` from a directory anyone could have written) and the binary Program files it names.
// The first byte picks the parser ('M': manifest, anything else: program); the rest is its input.
// Any input must be rejected with a message or parse into something that round-trips.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compile_cache/manifest.h"
#include "fuzz_check.h"
#include "npu/program.h"

namespace {

void fuzz_manifest(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto m = tandem::compile_cache::Manifest::from_json_text(text, "manifest.json");
  if (!m.ok()) {
    FUZZ_CHECK(m.status().message().find("manifest.json") != std::string::npos);  // errors name the file
    return;
  }
  // What parsed writes back and parses to the same text.
  const std::string again = m->to_json_text();
  auto back = tandem::compile_cache::Manifest::from_json_text(again, "manifest.json");
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->to_json_text() == again);
  for (const auto& v : m->variants)
    for (const std::string& name : v.programs) FUZZ_CHECK(m->find_program(name) != nullptr);
}

void fuzz_program(const uint8_t* data, size_t size) {
  auto p = tandem::npu::deserialize(data, size);
  if (!p.ok()) return;
  // A program that deserialized serializes to bytes that deserialize to it again, and its text
  // form round-trips.
  const std::vector<uint8_t> bytes = tandem::npu::serialize(*p);
  auto back = tandem::npu::deserialize(bytes);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(*back == *p);
  auto text = tandem::npu::parse_text(tandem::npu::to_text(*p));
  FUZZ_CHECK(text.ok());
  FUZZ_CHECK(*text == *p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 'M') fuzz_manifest(data + 1, size - 1);
  else fuzz_program(data + 1, size - 1);
  return 0;
}
