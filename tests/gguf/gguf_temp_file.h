// A per-test temporary path, removed at the end of the test. ctest runs tests in parallel
// processes, so the name includes the test's name and the process id.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace tandem::gguf::testing {

class TempFile {
 public:
  explicit TempFile(const std::string& suffix = ".gguf") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized tests' names hold slashes
    path_ = ::testing::TempDir() + "tandem_" + name + "_" + std::to_string(::getpid()) + suffix;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tandem::gguf::testing
