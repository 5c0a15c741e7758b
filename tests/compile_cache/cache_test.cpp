#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compile_cache/cache.h"
#include "npu/oplib/matmul.h"
#include "tests/model/test_models.h"

namespace tandem::compile_cache {
namespace {

const npu::TargetModel& target() {
  static const npu::TargetModel t = npu::TargetModel::load_default().value();
  return t;
}

std::string fresh_dir(const std::string& name) {
  const std::string d = testing::process_temp_dir() + "/" + name;
  std::filesystem::remove_all(d);
  return d;
}

ProgramEntry entry_for(const npu::oplib::MatmulSpec& s) {
  ProgramEntry e;
  e.rows = s.n;
  e.in = s.in;
  e.out = s.out;
  e.format = std::string(dtype_name(s.wtype));
  e.source_quant = e.format;
  e.order = "activation_stationary";
  return e;
}

CacheKey key() { return {"model", target_hash(target()), driver_version(), "q4_0"}; }

TEST(CompileCache, WritesHashesAndLoadsBack) {
  const std::string dir = fresh_dir("c1");
  CacheWriter w(dir);
  w.manifest().key = key();
  const npu::oplib::MatmulSpec s{4, 64, 96, DType::Q4_0};
  auto prog = npu::oplib::lower_matmul(s, target());
  ASSERT_TRUE(prog.ok());
  auto name = w.add_program(*prog, entry_for(s));
  ASSERT_TRUE(name.ok()) << name.status().message();
  // The same program again is stored once.
  auto again = w.add_program(*prog, entry_for(s));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *name);
  EXPECT_EQ(w.manifest().programs.size(), 1u);
  ASSERT_TRUE(w.finish().ok());

  auto c = CompileCache::open(dir, key());
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ProgramEntry* e = c->find(4, 64, 96, "q4_0");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(c->find(5, 64, 96, "q4_0"), nullptr);
  EXPECT_EQ(c->find(4, 64, 96, "q8_0"), nullptr);
  auto loaded = c->load(*e);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, *prog);
}

// Two power levels compiled the same shape differently: the runtime runs "max" unless told
// another level, and an unknown level names the ones the cache has.
TEST(CompileCache, PowerLevelSelectsItsVariantsPrograms) {
  const std::string dir = fresh_dir("c_levels");
  CacheWriter w(dir);
  w.manifest().key = key();
  npu::oplib::MatmulSpec fast{4, 64, 96, DType::Q4_0}, capped = fast;
  capped.arrays = 2;  // fewer arrays under the power cap: another program
  auto pf = npu::oplib::lower_matmul(fast, target());
  auto pc = npu::oplib::lower_matmul(capped, target());
  ASSERT_TRUE(pf.ok() && pc.ok());
  ASSERT_NE(npu::serialize(*pf), npu::serialize(*pc));
  auto nf = w.add_program(*pf, entry_for(fast));
  auto nc = w.add_program(*pc, entry_for(capped));
  ASSERT_TRUE(nf.ok() && nc.ok());
  ASSERT_NE(*nf, *nc);
  VariantEntry v;
  v.phase = "prefill";
  v.rows = 4;
  v.precision = "q4_0";
  v.power_level = "1.5W";
  v.power_cap_w = 1.5;
  v.programs = {*nc};
  w.manifest().variants.push_back(v);
  v.power_level = "max";
  v.power_cap_w = 0;
  v.programs = {*nf};
  w.manifest().variants.push_back(v);
  ASSERT_TRUE(w.finish().ok());

  auto c = CompileCache::open(dir, key());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->power_level(), "max");
  ASSERT_NE(c->find(4, 64, 96, "q4_0"), nullptr);
  EXPECT_EQ(c->find(4, 64, 96, "q4_0")->name, *nf);
  ASSERT_TRUE(c->select_power_level("1.5W").ok());
  ASSERT_NE(c->find(4, 64, 96, "q4_0"), nullptr);
  EXPECT_EQ(c->find(4, 64, 96, "q4_0")->name, *nc);
  const Status bad = c->select_power_level("3W");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("no variants at power level '3W' (the cache has: 1.5W, max)"), std::string::npos)
      << bad.message();
}

TEST(CompileCache, RefusesAModifiedProgram) {
  const std::string dir = fresh_dir("c2");
  CacheWriter w(dir);
  w.manifest().key = key();
  const npu::oplib::MatmulSpec s{1, 64, 64, DType::F16};
  auto name = w.add_program(npu::oplib::lower_matmul(s, target()).value(), entry_for(s));
  ASSERT_TRUE(name.ok());
  ASSERT_TRUE(w.finish().ok());
  auto c = CompileCache::open(dir, key());
  ASSERT_TRUE(c.ok());
  const ProgramEntry* e = c->find(1, 64, 64, "f16");
  ASSERT_NE(e, nullptr);
  {
    std::fstream f(dir + "/" + e->file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x5a');
  }
  auto loaded = c->load(*e);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("refusing to run a modified program"), std::string::npos)
      << loaded.status().message();
  std::filesystem::remove(dir + "/" + e->file);
  EXPECT_FALSE(c->load(*e).ok());
}

TEST(CompileCache, RefusesAStaleKeyNamingThePart) {
  const std::string dir = fresh_dir("c3");
  CacheWriter w(dir);
  w.manifest().key = key();
  ASSERT_TRUE(w.finish().ok());
  const char* parts[] = {"model", "NPU target", "compiler", "quant config"};
  for (int i = 0; i < 4; ++i) {
    CacheKey k = key();
    std::string* f[] = {&k.model_hash, &k.target_hash, &k.driver_version, &k.quant_config};
    *f[i] = "other";
    auto c = CompileCache::open(dir, k);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(std::string("compiled for another ") + parts[i]), std::string::npos)
        << c.status().message();
  }
  EXPECT_FALSE(CompileCache::open(fresh_dir("c4"), key()).ok());  // no manifest
}

// A cache compiled for several formats ("q4_0,q8_0") serves a run that needs any one of them,
// and no other (not a prefix, not the list's text in part).
TEST(CompileCache, OpensForEachFormatItWasCompiledFor) {
  const std::string dir = fresh_dir("c5");
  CacheWriter w(dir);
  CacheKey both = key();
  both.quant_config = "q4_0,q8_0";
  w.manifest().key = both;
  ASSERT_TRUE(w.finish().ok());
  for (const char* q : {"q4_0", "q8_0"}) {
    CacheKey k = both;
    k.quant_config = q;
    EXPECT_TRUE(CompileCache::open(dir, k).ok()) << q;
  }
  for (const char* q : {"f16", "q4", "q4_0,q8_0,f16", "", "8_0"}) {
    CacheKey k = both;
    k.quant_config = q;
    auto c = CompileCache::open(dir, k);
    ASSERT_FALSE(c.ok()) << q;
    EXPECT_NE(c.status().message().find("compiled for another quant config (cache has 'q4_0,q8_0'"), std::string::npos)
        << c.status().message();
  }
}

}  // namespace
}  // namespace tandem::compile_cache
