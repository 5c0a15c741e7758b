// core/file_io.h: reads of untrusted paths never block or run away; outputs are atomic and go
// only over regular files; an interrupted GGUF write leaves nothing behind.
#include "core/file_io.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/interrupt.h"
#include "model/gguf/gguf.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("tandem_file_io_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Every entry of the folder but `keep`: leftovers of a write.
  int others(const std::string& keep) const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += e.path().filename() != keep;
    return n;
  }
  fs::path dir_;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(FileIo, ReadsRegularFilesUpToTheBound) {
  std::ofstream(path("a.json")) << "0123456789";
  auto ok = read_regular_file(path("a.json"), 10, "the test file");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "0123456789");
  auto big = read_regular_file(path("a.json"), 9, "the test file");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("10 bytes"), std::string::npos) << big.status().message();
  EXPECT_EQ(read_regular_file(path("missing"), 9, "x").status().code(), StatusCode::kNotFound);
}

TEST_F(FileIo, RefusesFifosDevicesAndDirectoriesWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  for (const std::string& p : {path("fifo"), std::string("/dev/zero"), dir_.string()}) {
    auto r = read_regular_file(p, 1 << 20, "the test file");
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
  }
}

TEST_F(FileIo, WritesAtomicallyOverRegularFilesOnly) {
  std::ofstream(path("out.bin")) << "old";
  ASSERT_TRUE(write_file_atomically(path("out.bin"), "new bytes", "the output").ok());
  EXPECT_EQ(slurp(path("out.bin")), "new bytes");
  EXPECT_EQ(others("out.bin"), 0);  // no temporary left
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  for (const std::string& p : {path("fifo"), std::string("/dev/full"), std::string("/dev/null"), dir_.string()}) {
    const Status s = write_file_atomically(p, "x", "the output");
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_NE(s.message().find("written only as a new or a regular file"), std::string::npos) << s.message();
  }
}

TEST_F(FileIo, AnUncommittedOutputLeavesTheOldFile) {
  std::ofstream(path("out.bin")) << "old";
  {
    auto out = AtomicOutput::create(path("out.bin"), "the output");
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->write("half of the new").ok());
    EXPECT_EQ(others("out.bin"), 1);  // the temporary, beside the target
  }
  EXPECT_EQ(slurp(path("out.bin")), "old");
  EXPECT_EQ(others("out.bin"), 0);
}

// Ctrl-C inside an InterruptScope stops a GGUF write between tensors: the call fails, and neither
// the file nor its temporary remains. Run in a child process: the interrupt flag is process-wide.
TEST_F(FileIo, InterruptedGgufWriteLeavesNothing) {
  const std::string out = path("model.gguf");
  EXPECT_EXIT(
      {
        install_interrupt_handlers();
        InterruptScope scope;
        gguf::GgufWriter w;
        int produced = 0;
        for (int i = 0; i < 4; ++i) {
          w.add_tensor("t" + std::to_string(i), {32}, DType::F32, [&](uint8_t*, size_t) {
            if (++produced == 2) ::raise(SIGINT);  // arrives while the second tensor is made
          });
        }
        const Status s = w.write(out);
        const bool clean = !s.ok() && s.message().find("interrupted") != std::string::npos && interrupted() &&
                           produced == 2 && !fs::exists(out) && others("") == 0;
        std::_Exit(clean ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

// A write past the file size limit (ulimit -f) raised SIGXFSZ and killed the process mid-write,
// leaving OUT.partial-PID-0. Now it fails with a clear error, the temporary goes, and the signal's
// default comes back once no output is open. In a child process: the limit is process-wide.
class FileSizeLimit : public FileIo {
 protected:
  bool writes_fail_cleanly() const {
    struct rlimit limit {};
    limit.rlim_cur = 16384;
    limit.rlim_max = RLIM_INFINITY;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return false;
    const Status plain = write_file_atomically(path("out.bin"), std::string(65536, 'x'), "the output");
    gguf::GgufWriter w;
    w.add_tensor("t", {65536}, DType::F32, [](uint8_t*, size_t) {});
    const Status gguf = w.write(path("model.gguf"));
    struct sigaction after {};
    ::sigaction(SIGXFSZ, nullptr, &after);
    const bool clean =
        !plain.ok() && plain.message().find("out.bin: writing the output failed (file size limit exceeded") != std::string::npos &&
        !gguf.ok() && gguf.message().find("model.gguf: writing the GGUF file failed (file size limit exceeded") != std::string::npos &&
        others("") == 0 && after.sa_handler == SIG_DFL;
    if (!clean) std::fprintf(stderr, "%s | %s | %d left\n", plain.message().c_str(), gguf.message().c_str(), others(""));
    return clean;
  }
};

TEST_F(FileSizeLimit, AWritePastItFailsAndLeavesNothing) {
  EXPECT_EXIT(std::_Exit(writes_fail_cleanly() ? 0 : 3), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tandem
