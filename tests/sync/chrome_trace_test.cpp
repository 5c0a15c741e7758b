#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/trace/chrome_trace.h"

namespace tandem::trace {
namespace {

using nlohmann::json;

std::map<int, std::string> thread_names(const json& events) {
  std::map<int, std::string> names;
  for (const json& e : events) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names[e.at("tid").get<int>()] = e.at("args").at("name");
  }
  return names;
}

std::vector<json> of_phase(const json& events, const char* ph) {
  std::vector<json> out;
  for (const json& e : events)
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

TEST(VirtualClock, MovesOnlyForward) {
  VirtualClock c(100);
  EXPECT_EQ(c.now_ns(), 100);
  EXPECT_EQ(c.advance(50), 150);
  EXPECT_EQ(c.advance(-10), 150);
  EXPECT_EQ(c.advance_to(120), 150);
  EXPECT_EQ(c.advance_to(1000), 1000);
  EXPECT_EQ(c.now_ns(), 1000);
}

TEST(WallClock, Monotonic) {
  WallClock c;
  int64_t prev = c.now_ns();
  EXPECT_GE(prev, 0);
  for (int i = 0; i < 1000; ++i) {
    const int64_t t = c.now_ns();
    EXPECT_GE(t, prev);
    prev = t;
  }
}

TEST(ChromeTrace, JsonHasTracksEventsAndArgs) {
  VirtualClock clock;
  TraceRecorder rec(&clock, "tandem-sim");
  const TrackId gpu = rec.add_track("gpu");
  const TrackId npu = rec.add_track("npu");
  const TrackId sync = rec.add_track("sync");
  EXPECT_EQ(gpu, 1);
  EXPECT_EQ(sync, 3);
  EXPECT_EQ(rec.track_name(npu), "npu");
  EXPECT_EQ(rec.track_name(99), "");

  ASSERT_TRUE(rec.complete(npu, "matmul qkv", "kernel", 2'500, 912'000, {{"layer", 0}, {"n", int64_t{128}}}));
  {
    clock.advance_to(1'000'000);
    TraceScope s(rec, gpu, "rmsnorm", "kernel", {{"device", "gpu"}});
    s.add_arg({"ratio", 0.25});
    clock.advance(30'500);
  }
  ASSERT_TRUE(rec.instant(sync, "signal npu#1", "sync", 914'500, {{"fell_back", false}}));
  EXPECT_FALSE(rec.complete(42, "lost", "kernel", 0, 1)) << "unknown track";
  EXPECT_EQ(rec.event_count(), 3u);

  const json doc = json::parse(rec.to_json());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  const json& events = doc.at("traceEvents");
  ASSERT_TRUE(events.is_array());

  auto names = thread_names(events);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[1], "gpu");
  EXPECT_EQ(names[2], "npu");
  EXPECT_EQ(names[3], "sync");
  bool process_named = false;
  for (const json& e : events)
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_named = e.at("args").at("name") == "tandem-sim";
  EXPECT_TRUE(process_named);

  auto complete = of_phase(events, "X");
  ASSERT_EQ(complete.size(), 2u);
  // Sorted by start time: the NPU matmul (2.5 us) before the GPU rmsnorm (1000 us).
  EXPECT_EQ(complete[0].at("name"), "matmul qkv");
  EXPECT_EQ(complete[0].at("cat"), "kernel");
  EXPECT_EQ(complete[0].at("tid"), npu);
  EXPECT_EQ(complete[0].at("pid"), 1);
  EXPECT_DOUBLE_EQ(complete[0].at("ts").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(complete[0].at("dur").get<double>(), 912.0);
  EXPECT_EQ(complete[0].at("args").at("layer"), 0);
  EXPECT_EQ(complete[0].at("args").at("n"), 128);

  EXPECT_EQ(complete[1].at("name"), "rmsnorm");
  EXPECT_EQ(complete[1].at("tid"), gpu);
  EXPECT_DOUBLE_EQ(complete[1].at("ts").get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(complete[1].at("dur").get<double>(), 30.5);
  EXPECT_EQ(complete[1].at("args").at("device"), "gpu");
  EXPECT_DOUBLE_EQ(complete[1].at("args").at("ratio").get<double>(), 0.25);

  auto instants = of_phase(events, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("tid"), sync);
  EXPECT_EQ(instants[0].at("args").at("fell_back"), false);
  EXPECT_FALSE(instants[0].contains("dur"));
}

TEST(ChromeTrace, EscapesNamesAndWritesAFile) {
  WallClock clock;
  TraceRecorder rec(&clock);
  const TrackId t = rec.add_track("cpu \"worker\"\n0");
  { TraceScope s(rec, t, "op \\ \"quoted\"", "kernel"); }
  { TraceScope s(rec, t, "cancelled", "kernel"); s.cancel(); }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tandem_trace_test_" + std::to_string(::getpid()))).string();
  ASSERT_TRUE(rec.write_file(path).ok());
  std::ifstream f(path);
  const json doc = json::parse(f);
  std::remove(path.c_str());
  auto names = thread_names(doc.at("traceEvents"));
  EXPECT_EQ(names[t], "cpu \"worker\"\n0");
  auto complete = of_phase(doc.at("traceEvents"), "X");
  ASSERT_EQ(complete.size(), 1u);
  EXPECT_EQ(complete[0].at("name"), "op \\ \"quoted\"");
  EXPECT_GE(complete[0].at("dur").get<double>(), 0.0);

  EXPECT_FALSE(rec.write_file("/nonexistent-dir/x/trace.json").ok());
}

// A device queue's depth as a counter: "ph":"C" events with the series in args, sorted with the
// other events by time.
TEST(ChromeTrace, CountersAreCEventsWithTheirSeries) {
  VirtualClock clock;
  TraceRecorder rec(&clock);
  const TrackId gpu = rec.add_track("gpu");
  rec.complete(gpu, "matmul", "kernel", 1000, 500);
  rec.counter("gpu queue", 2000, {{"kernels", 0}});
  rec.counter("gpu queue", 500, {{"kernels", 3}});
  rec.counter("gpu queue", 1000, {{"kernels", 2}, {"bytes", 1.5}});
  EXPECT_EQ(rec.event_count(), 4u);
  const json doc = json::parse(rec.to_json());
  const auto counters = of_phase(doc.at("traceEvents"), "C");
  ASSERT_EQ(counters.size(), 3u);
  EXPECT_EQ(counters[0].at("name"), "gpu queue");
  EXPECT_DOUBLE_EQ(counters[0].at("ts").get<double>(), 0.5);
  EXPECT_EQ(counters[0].at("args").at("kernels"), 3);
  EXPECT_EQ(counters[1].at("args").at("kernels"), 2);
  EXPECT_DOUBLE_EQ(counters[1].at("args").at("bytes").get<double>(), 1.5);
  EXPECT_EQ(counters[2].at("args").at("kernels"), 0);
  EXPECT_FALSE(counters[0].contains("dur"));
  EXPECT_EQ(thread_names(doc.at("traceEvents")).size(), 1u) << "a counter adds no thread track";
}

TEST(ChromeTrace, ConcurrentRecording) {
  VirtualClock clock;
  TraceRecorder rec(&clock);
  std::vector<TrackId> tracks;
  for (int i = 0; i < 4; ++i) tracks.push_back(rec.add_track(std::string(1, char('a' + i))));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 500; ++k) rec.complete(tracks[size_t(i)], "k", "kernel", k * 1000, 500, {{"k", k}});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(rec.event_count(), 2000u);
  const json doc = json::parse(rec.to_json());
  std::map<int, int> per_track;
  for (const json& e : of_phase(doc.at("traceEvents"), "X")) per_track[e.at("tid").get<int>()]++;
  for (TrackId t : tracks) EXPECT_EQ(per_track[t], 500);
}

}  // namespace
}  // namespace tandem::trace
