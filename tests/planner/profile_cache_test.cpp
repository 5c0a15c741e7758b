// The device profile cache: one profile per device set + model shapes, reused, and re-profiled
// (never trusted) when the file is missing, unreadable or made for other facts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "planner/profile_cache.h"
#include "tests/planner/small_cost_db.h"

namespace tandem::planner {
namespace {

using Set = std::vector<ProfiledDevice>;

Set opencl_npu(const std::string& opencl_identity = "PoCL 3.1") {
  return {{"npu", devices::DeviceKind::kNpu, "hexagon-v75 model"}, {"opencl", devices::DeviceKind::kGpu, opencl_identity}};
}

ProfileSpace space_of(int64_t out) {
  ProfileSpace s;
  s.shapes = {MatmulShape{"attn_q", out, 256}};
  s.standard_lengths = {32, 64};
  return s;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "profile-cache-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(ProfileCache, KeyFollowsEveryFactTheNumbersDependOn) {
  const std::string base = profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3).file_name();
  EXPECT_EQ(base, profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3).file_name());
  EXPECT_NE(base, profile_cache_key(opencl_npu("PoCL 6.0"), "EPYC", space_of(256), 2, 3).file_name());
  EXPECT_NE(base, profile_cache_key({opencl_npu()[1]}, "EPYC", space_of(256), 2, 3).file_name());
  EXPECT_NE(base, profile_cache_key(opencl_npu(), "Xeon", space_of(256), 2, 3).file_name());
  EXPECT_NE(base, profile_cache_key(opencl_npu(), "EPYC", space_of(512), 2, 3).file_name());
  EXPECT_NE(base, profile_cache_key(opencl_npu(), "EPYC", space_of(256), 1, 3).file_name());
  ProfileSpace q8 = space_of(256);
  q8.weight_type = DType::Q8_0;
  EXPECT_NE(base, profile_cache_key(opencl_npu(), "EPYC", q8, 2, 3).file_name());
  ProfileSpace lengths = space_of(256);
  lengths.standard_lengths = {32, 128};
  EXPECT_NE(base, profile_cache_key(opencl_npu(), "EPYC", lengths, 2, 3).file_name());
}

// With a compile cache the npu runs its programs, so a profile is made (and kept) per cache.
TEST(ProfileCache, KeyNamesTheCompileCacheTheNpuRuns) {
  auto cache_for = [](const std::string& model_hash) {
    const std::string dir = fresh_dir("cc-" + model_hash);
    compile_cache::CacheWriter w(dir);
    w.manifest().key = {model_hash, "target", "driver", "q4_0"};
    EXPECT_TRUE(w.finish().ok());
    auto c = compile_cache::CompileCache::open_any(dir);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::make_shared<const compile_cache::CompileCache>(std::move(*c));
  };
  auto key = [](const ProfileSpace& s) { return profile_cache_key(opencl_npu(), "EPYC", s, 2, 3).file_name(); };
  ProfileSpace library = space_of(256), a = space_of(256), a_again = space_of(256), b = space_of(256);
  a.npu_cache = cache_for("m1");
  a_again.npu_cache = cache_for("m1");
  b.npu_cache = cache_for("m2");
  EXPECT_NE(key(library), key(a));
  EXPECT_NE(key(a), key(b));
  EXPECT_EQ(key(a), key(a_again));
}

TEST(ProfileCache, ProfilesOnceThenReadsBack) {
  const std::string dir = fresh_dir("once");
  const ProfileCacheKey key = profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3);
  int profiled = 0;
  auto profile = [&]() -> Result<CostDb> {
    ++profiled;
    return testing::small_db();
  };
  auto first = cached_profile(dir, key, profile);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_FALSE(first->from_cache);
  EXPECT_EQ(profiled, 1);
  EXPECT_TRUE(std::filesystem::exists(first->path));
  auto second = cached_profile(dir, key, profile);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(profiled, 1);
  EXPECT_EQ(second->db.to_json(), first->db.to_json());
  // Another device set is another profile.
  auto other = cached_profile(dir, profile_cache_key(opencl_npu("PoCL 6.0"), "EPYC", space_of(256), 2, 3), profile);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->from_cache);
  EXPECT_EQ(profiled, 2);
}

TEST(ProfileCache, UnreadableOrForeignFilesAreProfiledAgain) {
  const std::string dir = fresh_dir("bad");
  const ProfileCacheKey a = profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3);
  const ProfileCacheKey b = profile_cache_key(opencl_npu(), "EPYC", space_of(512), 2, 3);
  int profiled = 0;
  auto profile = [&]() -> Result<CostDb> {
    ++profiled;
    return testing::small_db();
  };
  ASSERT_TRUE(cached_profile(dir, a, profile).ok());
  // b's file holding a's profile (a collision, a copied file): made for other shapes.
  std::filesystem::copy_file(dir + "/" + a.file_name(), dir + "/" + b.file_name());
  auto foreign = cached_profile(dir, b, profile);
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE(foreign->from_cache);
  EXPECT_NE(foreign->why.find("made for other devices or shapes"), std::string::npos) << foreign->why;
  // A truncated file: not read, profiled again, and the good one replaces it.
  std::ofstream(dir + "/" + a.file_name(), std::ios::trunc) << "{\"format\": \"tandem-device-";
  auto truncated = cached_profile(dir, a, profile);
  ASSERT_TRUE(truncated.ok());
  EXPECT_FALSE(truncated->from_cache);
  EXPECT_EQ(profiled, 3);
  auto again = cached_profile(dir, a, profile);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(profiled, 3);
}

TEST(ProfileCache, AFolderThatCannotBeWrittenOnlyCostsTheCache) {
  const std::string file = fresh_dir("blocked");
  std::ofstream(file) << "a file where the folder should be";
  int profiled = 0;
  auto r = cached_profile(file + "/profiles", profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3), [&]() -> Result<CostDb> {
    ++profiled;
    return testing::small_db();
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(profiled, 1);
  EXPECT_NE(r->why.find("not cached"), std::string::npos) << r->why;
}

TEST(ProfileCache, AFailedProfileFailsTheRun) {
  auto r = cached_profile(fresh_dir("fail"), profile_cache_key(opencl_npu(), "EPYC", space_of(256), 2, 3),
                          []() -> Result<CostDb> { return Unsupported("npu: no such device"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no such device"), std::string::npos);
}

}  // namespace
}  // namespace tandem::planner
