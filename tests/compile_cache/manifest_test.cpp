#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "compile_cache/manifest.h"

namespace tandem::compile_cache {
namespace {

Manifest sample() {
  Manifest m;
  m.key = {"aa", "bb", "tandem-npu-compiler test", "q4_0"};
  m.model_name = "test-small";
  m.target_name = "hexagon-v75";
  m.buckets = {4, 8};
  ProgramEntry p;
  p.name = "mm8_64x64";
  p.file = "programs/mm8_64x64.tnpu";
  p.sha256 = std::string(64, 'a');
  p.bytes = 100;
  p.rows = 8;
  p.in = 64;
  p.out = 64;
  p.format = "q4_0";
  p.source_quant = "q4_0";
  p.order = "activation_stationary";
  p.double_buffer_out = false;
  p.arrays = 4;
  p.est_cycles = 1234.5;
  p.max_error_ratio = 0.25;
  m.programs.push_back(p);
  ProgramEntry kv;
  kv.name = "kv1_4096x512_head_major";
  kv.file = "programs/kv1_4096x512_head_major.tnpu";
  kv.sha256 = std::string(64, 'b');
  kv.bytes = 80;
  kv.kind = "kv_append";
  kv.rows = 1;
  kv.kv = {4096, 8, 64, 256, "head_major", "decode"};
  kv.est_cycles = 600;
  kv.max_error_ratio = 0;
  m.programs.push_back(kv);
  ProgramEntry e;
  e.name = "rmsnorm8_64";
  e.file = "programs/rmsnorm8_64.tnpu";
  e.sha256 = std::string(64, 'c');
  e.bytes = 60;
  e.kind = "elementwise";
  e.rows = 8;
  e.elementwise = {"rmsnorm", 64, 1e-5};
  e.est_cycles = 300;
  e.max_error_ratio = 0.5;
  m.programs.push_back(e);
  ProgramEntry nl = p;  // the matmul schedule's fields, one pack per projection
  nl.name = "norm_mm8_in64_64_32";
  nl.file = "programs/norm_mm8_in64_64_32.tnpu";
  nl.sha256 = std::string(64, 'd');
  nl.kind = "norm_linear";
  nl.out = 0;
  nl.norm_linear = {{64, 32}, 1e-6};
  m.programs.push_back(nl);
  VariantEntry v;
  v.phase = "prefill";
  v.rows = 8;
  v.power_level = "1.5W";
  v.power_cap_w = 1.5;
  v.precision = "q4_0";
  v.programs = {"mm8_64x64", "kv1_4096x512_head_major"};
  v.fallbacks.push_back({"llm.rope", "gpu", "no NPU lowering for llm.rope", 1e-7});
  v.est_seconds = 2e-6;
  v.exec_seconds = 2.5e-6;
  v.ddr_bytes = 123456;
  m.variants.push_back(v);
  return m;
}

TEST(Manifest, RoundTripsEveryField) {
  const Manifest m = sample();
  auto back = Manifest::from_json_text(m.to_json_text(), "manifest.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->key, m.key);
  EXPECT_EQ(back->buckets, m.buckets);
  ASSERT_EQ(back->programs.size(), 4u);
  const ProgramEntry& nl = back->programs[3];
  EXPECT_EQ(nl.kind, "norm_linear");
  EXPECT_EQ(nl.norm_linear.outs, (std::vector<uint32_t>{64, 32}));
  EXPECT_DOUBLE_EQ(nl.norm_linear.eps, 1e-6);
  EXPECT_EQ(nl.in, 64u);
  EXPECT_EQ(nl.format, "q4_0");
  EXPECT_FALSE(nl.double_buffer_out);
  EXPECT_EQ(back->programs[2].kind, "elementwise");
  EXPECT_EQ(back->programs[2].elementwise.op, "rmsnorm");
  EXPECT_EQ(back->programs[2].elementwise.cols, 64u);
  EXPECT_DOUBLE_EQ(back->programs[2].elementwise.eps, 1e-5);
  const ProgramEntry& p = back->programs[0];
  EXPECT_EQ(p.name, "mm8_64x64");
  EXPECT_EQ(p.kind, "matmul");
  const ProgramEntry& kv = back->programs[1];
  EXPECT_EQ(kv.kind, "kv_append");
  EXPECT_EQ(kv.kv.capacity, 4096u);
  EXPECT_EQ(kv.kv.heads, 8u);
  EXPECT_EQ(kv.kv.head_dim, 64u);
  EXPECT_EQ(kv.kv.page_tokens, 256u);
  EXPECT_EQ(kv.kv.layout, "head_major");
  EXPECT_EQ(kv.kv.phase, "decode");
  EXPECT_FALSE(p.double_buffer_out);
  EXPECT_EQ(p.arrays, 4u);
  EXPECT_DOUBLE_EQ(p.est_cycles, 1234.5);
  ASSERT_EQ(back->variants.size(), 1u);
  EXPECT_EQ(back->variants[0].power_level, "1.5W");
  EXPECT_DOUBLE_EQ(back->variants[0].power_cap_w, 1.5);
  EXPECT_DOUBLE_EQ(back->variants[0].exec_seconds, 2.5e-6);
  EXPECT_EQ(back->variants[0].ddr_bytes, 123456u);
  ASSERT_EQ(back->variants[0].fallbacks.size(), 1u);
  EXPECT_EQ(back->variants[0].fallbacks[0].op, "llm.rope");
  EXPECT_EQ(back->to_json_text(), m.to_json_text());
}

TEST(Manifest, KeyDigestDependsOnEveryPart) {
  const CacheKey k = sample().key;
  for (int part = 0; part < 4; ++part) {
    CacheKey other = k;
    std::string* f[] = {&other.model_hash, &other.target_hash, &other.driver_version, &other.quant_config};
    *f[part] += "x";
    EXPECT_NE(other.digest(), k.digest()) << part;
  }
}

void expect_error(nlohmann::json j, const std::string& needle) {
  auto r = Manifest::from_json_text(j.dump(), "cache/manifest.json");
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_NE(r.status().message().find("cache/manifest.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(Manifest, StrictFieldsNameFileAndPath) {
  const nlohmann::json good = nlohmann::json::parse(sample().to_json_text());
  auto j = good;
  j["programs"][0].erase("sha256");
  expect_error(j, "programs[0].sha256");
  j = good;
  j["programs"][0]["rows"] = -3;
  expect_error(j, "programs[0].rows");
  j = good;
  j["programs"][0]["file"] = "../../etc/passwd";
  expect_error(j, "must be a relative path inside the cache");
  j = good;
  j["programs"][0]["sha256"] = "abc";
  expect_error(j, "64 hex digits");
  j = good;
  j["variants"][0]["programs"][0] = "nope";
  expect_error(j, "variants[0].programs[0]");
  j = good;
  j["format_version"] = 7;
  expect_error(j, "format_version 7");
  j = good;
  j["buckets"][1] = 0;
  expect_error(j, "buckets[1]");
  j = good;
  j["programs"][0]["kind"] = "conv";
  expect_error(j, "programs[0].kind' must be matmul, kv_append, elementwise or norm_linear, got 'conv'");
  j = good;
  j["programs"][3]["norm_linear"]["outs"] = nlohmann::json::array();
  expect_error(j, "programs[3].norm_linear.outs' must list 1..16 projections, got 0");
  j = good;
  j["programs"][3]["norm_linear"]["outs"][1] = 0;
  expect_error(j, "programs[3].norm_linear.outs[1]' must be a positive dimension, got 0");
  j = good;
  j["programs"][3]["norm_linear"]["eps"] = -1;
  expect_error(j, "programs[3].norm_linear.eps' must be > 0");
  j = good;
  j["programs"][3].erase("norm_linear");
  expect_error(j, "programs[3].norm_linear");
  j = good;
  j["programs"][3].erase("format");
  expect_error(j, "programs[3].format");
  j = good;
  j["variants"][0]["ddr_bytes"] = -1;
  expect_error(j, "variants[0].ddr_bytes");
  j = good;
  j["programs"][2]["elementwise"]["op"] = "gelu";
  expect_error(j, "programs[2].elementwise.op' must be rmsnorm, swiglu or add, got 'gelu'");
  j = good;
  j["programs"][1]["kv"]["layout"] = "diagonal";
  expect_error(j, "programs[1].kv.layout' must be token_major or head_major");
  j = good;
  j["programs"][1]["kv"].erase("heads");
  expect_error(j, "programs[1].kv.heads");
  EXPECT_FALSE(Manifest::from_json_text("{not json", "m.json").ok());
}

// The Hexagon objects (optional): they round-trip, and a present section is as strict as the rest.
TEST(Manifest, HexagonObjectsRoundTripAndAreStrict) {
  Manifest m = sample();
  m.has_hexagon = true;
  m.hexagon.target = "hexagon-v66-hvx128";
  m.hexagon.toolchain = "clang-19";
  m.hexagon.binary = {"hexagon/tandem_hexagon_dsp", std::string(64, 'a'), 4096};
  m.hexagon.objects = {{"hexagon/obj/program_0.o", std::string(64, 'b'), 512}};
  m.hexagon.sources = {{"hexagon/src/program_0.c", std::string(64, 'c'), 256}};
  m.hexagon.programs = {{0, "mm8_64x64", 8, 64, 64, "q4_0", "weight_stationary"}};
  auto back = Manifest::from_json_text(m.to_json_text(), "manifest.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->has_hexagon);
  EXPECT_EQ(back->hexagon.binary.sha256, m.hexagon.binary.sha256);
  EXPECT_EQ(back->hexagon.programs.at(0).order, "weight_stationary");
  EXPECT_FALSE(Manifest::from_json_text(sample().to_json_text(), "manifest.json")->has_hexagon);
  const nlohmann::json good = nlohmann::json::parse(m.to_json_text());
  auto j = good;
  j["hexagon"]["binary"]["file"] = "../../usr/bin/evil";
  expect_error(j, "hexagon.binary.file' must be a relative path inside the cache");
  j = good;
  j["hexagon"]["objects"][0]["sha256"] = "abc";
  expect_error(j, "hexagon.objects[0].sha256' must be 64 hex digits");
  j = good;
  j["hexagon"]["programs"][0]["format"] = "q5_k";
  expect_error(j, "hexagon.programs[0].format' must be q8_0 or q4_0");
  j = good;
  j["hexagon"].erase("target");
  expect_error(j, "hexagon.target");
  j = good;
  j["hexagon"]["programs"][0]["rows"] = -1;
  expect_error(j, "hexagon.programs[0].rows");
}

TEST(Manifest, SurvivesMutations) {
  // Random edits of a valid manifest: every one parses or fails with a message, never crashes.
  const std::string text = sample().to_json_text();
  std::mt19937 rng(11);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = char(rng() % 128); break;
        case 1: t.erase(at, 1 + rng() % 8); break;
        default: t.insert(at, 1, "\"{}[],:-0123456789e"[rng() % 19]); break;
      }
      if (t.empty()) t = "{";
    }
    auto r = Manifest::from_json_text(t, "m.json");
    if (r.ok()) ++parsed;
    else EXPECT_FALSE(r.status().message().empty());
  }
  EXPECT_LT(parsed, 3000);
}

}  // namespace
}  // namespace tandem::compile_cache
