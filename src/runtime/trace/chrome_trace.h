// A Chrome trace (Trace Event Format) recorder: the timeline that Perfetto and chrome://tracing
// open. One process, one track ("thread") per device plus one per sync thread; each kernel or
// wait is a complete event ("ph":"X") on its track; a counter ("ph":"C", e.g. a device queue's
// depth) is a track of its own, named by the counter.
//
//   trace::WallClock clock;
//   trace::TraceRecorder rec(&clock);
//   auto gpu = rec.add_track("gpu");
//   { trace::TraceScope s(rec, gpu, "matmul ffn_down", "kernel", {{"layer", 3}}); ...run... }
//   rec.write_file("trace.json");
//
// Times are kept in ns from the recorder's clock and written as fractional microseconds ("ts",
// "dur"), the unit the format defines; "displayTimeUnit":"ns" lets viewers show sub-µs detail.
// Recording is thread-safe (one mutex; a kernel-granularity event rate does not contend).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"
#include "runtime/trace/clock.h"

namespace tandem::trace {

using TrackId = int;

struct TraceArg {
  using Value = std::variant<int64_t, double, bool, std::string>;
  std::string key;
  Value value;

  TraceArg(std::string k, int v) : key(std::move(k)), value(int64_t(v)) {}
  TraceArg(std::string k, int64_t v) : key(std::move(k)), value(v) {}
  TraceArg(std::string k, uint64_t v) : key(std::move(k)), value(int64_t(v)) {}
  TraceArg(std::string k, double v) : key(std::move(k)), value(v) {}
  TraceArg(std::string k, bool v) : key(std::move(k)), value(v) {}
  TraceArg(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
  TraceArg(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
};

struct TraceEvent {
  enum class Kind { kComplete, kInstant, kCounter };
  Kind kind = Kind::kComplete;
  std::string name;
  std::string category;
  TrackId track = 0;
  int64_t start_ns = 0;
  int64_t dur_ns = 0;  // kComplete only
  std::vector<TraceArg> args;  // kCounter: the series and their values (numbers)
};

class TraceRecorder {
 public:
  // `clock` stamps TraceScope events and now_ns(); it must outlive the recorder.
  explicit TraceRecorder(const Clock* clock, std::string process_name = "tandem", int pid = 1);
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  const Clock& clock() const { return *clock_; }
  int64_t now_ns() const { return clock_->now_ns(); }

  // A named track (written as thread_name / thread_sort_index metadata). Ids are 1, 2, ... in
  // creation order, which is also the default display order.
  TrackId add_track(std::string name);
  std::string track_name(TrackId id) const;  // "" for an unknown id

  // A span [start_ns, start_ns + dur_ns) on `track`. Events on an unknown track are dropped
  // (returns false).
  bool complete(TrackId track, std::string name, std::string category, int64_t start_ns, int64_t dur_ns,
                std::vector<TraceArg> args = {});
  // A moment on `track` (a signal, a fallback to blocking).
  bool instant(TrackId track, std::string name, std::string category, int64_t ts_ns,
               std::vector<TraceArg> args = {});

  // A counter's values from ts_ns on: one counter track named `name` (Perfetto shows
  // "<name> <series>" per series), process-wide. Values are numbers (int or double args).
  void counter(std::string name, int64_t ts_ns, std::vector<TraceArg> series);

  size_t event_count() const;
  std::vector<TraceEvent> events() const;  // a copy, in recording order

  // The whole trace: {"traceEvents":[metadata..., events sorted by start], "displayTimeUnit":"ns",
  // "otherData":{...}}.
  std::string to_json(int indent = -1) const;
  Status write_file(const std::string& path) const;

 private:
  const Clock* clock_;
  std::string process_name_;
  int pid_;
  mutable std::mutex mu_;
  std::vector<std::string> tracks_;  // index = id - 1
  std::vector<TraceEvent> events_;
};

// Records a complete event from construction to destruction, stamped by the recorder's clock.
class TraceScope {
 public:
  TraceScope(TraceRecorder& rec, TrackId track, std::string name, std::string category,
             std::vector<TraceArg> args = {})
      : rec_(&rec), track_(track), name_(std::move(name)), category_(std::move(category)),
        args_(std::move(args)), start_ns_(rec.now_ns()) {}
  ~TraceScope() {
    if (rec_) rec_->complete(track_, std::move(name_), std::move(category_), start_ns_, rec_->now_ns() - start_ns_,
                             std::move(args_));
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  void add_arg(TraceArg a) { args_.push_back(std::move(a)); }
  void cancel() { rec_ = nullptr; }

 private:
  TraceRecorder* rec_;
  TrackId track_;
  std::string name_;
  std::string category_;
  std::vector<TraceArg> args_;
  int64_t start_ns_;
};

}  // namespace tandem::trace
