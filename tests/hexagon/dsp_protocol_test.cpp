// The protocol's failure paths: bad commands are refused with a status and the DSP keeps
// serving; a DSP that dies mid-command, hangs past the timeout or never starts gives a clear
// error, never a hang; quit ends the process.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dsp_fixture.h"

namespace tandem::hexagon {
namespace {

using Clock = std::chrono::steady_clock;
using testing::DspTest;

class HexagonProtocol : public DspTest {
 protected:
  // A valid 1 x 64 x 2 Q8_0 matmul call, for the bad-command cases to spoil one field of.
  DspCall good_matmul() {
    const uint32_t in = 64, out = 2;
    Result<QuantizedActivations> a = quantize_activations(testing::random_activations(1, in, 1), 1, in);
    const std::vector<uint8_t> w = testing::quantized_weights(WeightFormat::kQ8_0, out, in, 2);
    DspCall c;
    c.method = THX_METHOD_MATMUL_Q8_0;
    c.format = THX_FORMAT_Q8_0;
    c.n = 1;
    c.in = in;
    c.out = out;
    c.buf[0] = put(w);
    c.buf[1] = put(a->q);
    c.buf[2] = put(a->d);
    c.buf[3] = put(nullptr, out * 4);
    return c;
  }

  uint32_t status_of(const DspCall& c) {
    Result<DspReply> r = dsp().invoke(c);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->status : ~0u;
  }
};

TEST_F(HexagonProtocol, BadCommandsGetErrorStatusesAndTheDspKeepsServing) {
  const DspCall good = good_matmul();
  ASSERT_EQ(status_of(good), THX_OK);
  const uint32_t map = uint32_t(dsp().map_bytes());
  struct Case {
    const char* what;
    uint32_t expected;
    void (*spoil)(DspCall&, uint32_t map);
  };
  const Case cases[] = {
      {"unknown method", THX_E_METHOD, [](DspCall& c, uint32_t) { c.method = 77; }},
      {"unknown handle", THX_E_HANDLE, [](DspCall& c, uint32_t) { c.handle = 9; }},
      {"offset past the map", THX_E_BOUNDS, [](DspCall& c, uint32_t map) { c.buf[0].offset = map + 4096; }},
      {"length overflows 32 bits", THX_E_BOUNDS, [](DspCall& c, uint32_t) { c.buf[3].bytes = 0xfffffff0u; }},
      {"offset + length wraps", THX_E_BOUNDS,
       [](DspCall& c, uint32_t) { c.buf[0] = {0xffffff00u, 0x200u}; }},
      {"buffer in the header", THX_E_BOUNDS, [](DspCall& c, uint32_t) { c.buf[3].offset = 128; }},
      {"buffer in the guard", THX_E_BOUNDS,
       [](DspCall& c, uint32_t map) { c.buf[3] = {map - THX_GUARD_BYTES, 8}; }},
      {"in not a multiple of 32", THX_E_ARGS, [](DspCall& c, uint32_t) { c.in = 48; }},
      {"in = 0", THX_E_ARGS, [](DspCall& c, uint32_t) { c.in = 0; }},
      {"out = 0", THX_E_ARGS, [](DspCall& c, uint32_t) { c.out = 0; }},
      {"wrong format", THX_E_ARGS, [](DspCall& c, uint32_t) { c.format = THX_FORMAT_Q4_0; }},
      {"output overlaps the weights", THX_E_ARGS, [](DspCall& c, uint32_t) { c.buf[3].offset = c.buf[0].offset; }},
      {"misaligned activations", THX_E_ALIGN, [](DspCall& c, uint32_t) { c.buf[1].offset += 4; c.buf[1].bytes -= 4; }},
      {"misaligned output", THX_E_ALIGN, [](DspCall& c, uint32_t) { c.buf[3].offset += 2; }},
      {"buffer shorter than the shape", THX_E_TOO_LARGE, [](DspCall& c, uint32_t) { c.buf[0].bytes -= 1; }},
      {"n * out * 4 past 2^32", THX_E_TOO_LARGE, [](DspCall& c, uint32_t) { c.n = 0x40000000u; c.out = 4; }},
      {"in past the DSP's limit", THX_E_TOO_LARGE, [](DspCall& c, uint32_t) { c.in = THX_MAX_IN + 32; }},
  };
  for (const Case& k : cases) {
    DspCall c = good;
    k.spoil(c, map);
    EXPECT_EQ(status_of(c), k.expected) << k.what;
    Result<uint32_t> v = dsp().ping(42);
    ASSERT_TRUE(v.ok()) << "after '" << k.what << "': " << v.status().message();
  }
  EXPECT_EQ(status_of(good), THX_OK);
  // A quantize with a spoiled buffer, through the typed call: an error Status that says why.
  Status s = dsp().quantize({THX_HEADER_BYTES, 256}, {map, 128}, {THX_HEADER_BYTES + 4096, 4}, 1, 64);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("refused quantize"), std::string::npos) << s.message();
}

// A matmul of ~270 M MACs (a few tenths of a second emulated) killed once the DSP has taken it
// up: the call reports the signal and the method within the timeout, later calls fail at once.
TEST_F(HexagonProtocol, AKilledDspIsAClearErrorNotAHang) {
  DspSessionOptions o;
  o.call_timeout = std::chrono::milliseconds(20000);
  Result<std::unique_ptr<DspSession>> opened = DspSession::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  DspSession& s = **opened;
  const uint32_t n = 16, in = 4096, out = 4096;
  Result<PoolBuffer> w = s.allocate(weight_bytes(WeightFormat::kQ4_0, out, in)), q = s.allocate(n * in),
                     d = s.allocate(n * in / 32 * 2), y = s.allocate(n * out * 4);
  ASSERT_TRUE(w.ok() && q.ok() && d.ok() && y.ok());
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
    while (!s.command_running() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    killed = kill(s.pid(), SIGKILL) == 0;
  });
  const Clock::time_point start = Clock::now();
  Status st = s.matmul(WeightFormat::kQ4_0, *w, *q, *d, *y, n, in, out);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  killer.join();
  ASSERT_TRUE(killed) << "the matmul ended before the kill";
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "hexagon DSP process exited with signal 9 (Killed) during matmul_q4_0");
  EXPECT_LT(seconds, 5.0);
  Result<uint32_t> after = s.ping(1);
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.status().message().find("is gone"), std::string::npos) << after.status().message();
}

TEST_F(HexagonProtocol, ACallPastItsTimeoutKillsTheDsp) {
  Result<std::unique_ptr<DspSession>> opened = DspSession::open();
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  DspSession& s = **opened;
  const uint32_t n = 16, in = 4096, out = 4096;
  Result<PoolBuffer> w = s.allocate(weight_bytes(WeightFormat::kQ8_0, out, in)), q = s.allocate(n * in),
                     d = s.allocate(n * in / 32 * 2), y = s.allocate(n * out * 4);
  ASSERT_TRUE(w.ok() && q.ok() && d.ok() && y.ok());
  DspCall c;
  c.method = THX_METHOD_MATMUL_Q8_0;
  c.format = THX_FORMAT_Q8_0;
  c.n = n;
  c.in = in;
  c.out = out;
  c.buf[0] = *w;
  c.buf[1] = *q;
  c.buf[2] = *d;
  c.buf[3] = *y;
  const Clock::time_point start = Clock::now();
  Result<DspReply> r = s.invoke(c, std::chrono::milliseconds(50));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "hexagon DSP process did not complete matmul_q8_0 within 50 ms and was killed");
  EXPECT_FALSE(s.alive());
}

TEST_F(HexagonProtocol, ADspThatCannotStartSaysSo) {
  DspSessionOptions o;
  o.dsp_binary = "/nonexistent/tandem_hexagon_dsp";
  Result<std::unique_ptr<DspSession>> s = DspSession::open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exited with status"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("while starting"), std::string::npos) << s.status().message();
}

// A host that dies without a word (here a forked child that _exits with its session open): the
// DSP sees its parent change at its next idle check and exits with status 5. This process is the
// orphan's subreaper meanwhile, so it can reap it and read the status.
TEST_F(HexagonProtocol, TheDspExitsWhenItsHostDies) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    close(fds[0]);
    Result<std::unique_ptr<DspSession>> s = DspSession::open();
    pid_t dsp = s.ok() ? (*s)->pid() : -1;
    if (write(fds[1], &dsp, sizeof dsp) != sizeof dsp) _exit(2);
    _exit(0);  // no destructor: the DSP is not told
  }
  close(fds[1]);
  pid_t dsp = -1;
  ASSERT_EQ(read(fds[0], &dsp, sizeof dsp), ssize_t(sizeof dsp));
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(host, &wstatus, 0), host);
  ASSERT_GT(dsp, 0) << "the forked host could not open a session";
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  pid_t r = 0;
  while ((r = waitpid(dsp, &wstatus, WNOHANG)) == 0 && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  if (r == 0) kill(dsp, SIGKILL), waitpid(dsp, &wstatus, 0);
  ASSERT_EQ(r, dsp) << "the orphaned DSP still runs after 5 s";
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 5) << wstatus;
}

// Under scripts/test-arm64.sh the host runs in qemu-aarch64 with QEMU_CPU set; qemu-hexagon must
// not inherit it (it would refuse "max" or "cortex-a53" as its CPU).
TEST_F(HexagonProtocol, AHostUnderQemuWithQemuCpuSetStillStartsTheDsp) {
  const char* before = std::getenv("QEMU_CPU");
  const std::string saved = before ? before : "";
  setenv("QEMU_CPU", "cortex-a53", 1);
  Result<std::unique_ptr<DspSession>> s = DspSession::open();
  if (before) setenv("QEMU_CPU", saved.c_str(), 1);
  else unsetenv("QEMU_CPU");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE((*s)->ping(3).ok());
}

TEST_F(HexagonProtocol, QuitEndsTheProcessAndNoSharedFileIsLeft) {
  Result<std::unique_ptr<DspSession>> opened = DspSession::open();
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  DspSession& s = **opened;
  const pid_t pid = s.pid();
  ASSERT_TRUE(s.ping(5).ok());
  // The name goes once the DSP has mapped the file: nothing of this process stays in /dev/shm.
  const std::string mine = "tandem-hexagon-" + std::to_string(getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    EXPECT_NE(e.path().filename().string().rfind(mine, 0), 0u) << e.path();
  ASSERT_TRUE(s.close().ok());
  EXPECT_FALSE(s.alive());
  EXPECT_NE(kill(pid, 0), 0) << "the process was reaped";
  EXPECT_FALSE(s.ping(6).ok());
}

}  // namespace
}  // namespace tandem::hexagon
