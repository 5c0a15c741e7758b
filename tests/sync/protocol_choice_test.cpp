// The measured choice between fast and blocking waits, per handoff class.
#include "runtime/sync/protocol_choice.h"

#include <gtest/gtest.h>

namespace tandem::sync {
namespace {

// Drives a class whose waits cost `fast_ns` with the fast protocol and `blocking_ns` blocking;
// returns how many of the last `tail` waits used fast.
int fast_in_tail(ProtocolChooser& c, const char* cls, int64_t fast_ns, int64_t blocking_ns, int waits, int tail) {
  int fast = 0;
  for (int i = 0; i < waits; ++i) {
    const SyncMode m = c.choose(cls);
    c.record(cls, m, m == SyncMode::kFast ? fast_ns : blocking_ns);
    if (i >= waits - tail && m == SyncMode::kFast) ++fast;
  }
  return fast;
}

TEST(ProtocolChooser, ProbesBothThenKeepsTheFaster) {
  ProtocolChooser c({3, 32, 1.0});
  // The first waits alternate until each protocol has three samples.
  EXPECT_EQ(c.choose("k"), SyncMode::kFast);
  c.record("k", SyncMode::kFast, 100);
  EXPECT_EQ(c.choose("k"), SyncMode::kBlocking);
  c.record("k", SyncMode::kBlocking, 300);
  // Then fast, cheaper here, is what nearly every wait uses; blocking only on a reprobe.
  EXPECT_GE(fast_in_tail(c, "k", 100, 300, 200, 128), 128 - 128 / 32 - 1);
  EXPECT_EQ(c.stats("k").preferred, SyncMode::kFast);
  // A class where polling loses keeps blocking.
  EXPECT_LE(fast_in_tail(c, "slow-poll", 500, 200, 200, 128), 128 / 32 + 1);
  EXPECT_EQ(c.stats("slow-poll").preferred, SyncMode::kBlocking);
  EXPECT_EQ(c.classes_preferring(SyncMode::kFast), 1u);
  EXPECT_EQ(c.classes_preferring(SyncMode::kBlocking), 1u);
}

TEST(ProtocolChooser, FollowsAChangeThroughReprobes) {
  ProtocolChooser c({3, 8, 1.0});
  fast_in_tail(c, "k", 100, 300, 100, 10);
  ASSERT_EQ(c.stats("k").preferred, SyncMode::kFast);
  // A build starts beside us: polling now costs more than blocking. The reprobes see it.
  EXPECT_LE(fast_in_tail(c, "k", 900, 300, 400, 64), 64 / 8 + 1);
  EXPECT_EQ(c.stats("k").preferred, SyncMode::kBlocking);
}

TEST(ProtocolChooser, NoProbesMeansAlternateOnly) {
  ProtocolChooser c({1, 0, 1.0});  // reprobe_every 0: never reprobe once chosen
  fast_in_tail(c, "k", 300, 100, 2, 2);
  EXPECT_EQ(fast_in_tail(c, "k", 300, 100, 50, 50), 0);
}

}  // namespace
}  // namespace tandem::sync
