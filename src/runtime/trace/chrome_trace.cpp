#include "runtime/trace/chrome_trace.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_io.h"

namespace tandem::trace {

TraceRecorder::TraceRecorder(const Clock* clock, std::string process_name, int pid)
    : clock_(clock), process_name_(std::move(process_name)), pid_(pid) {}

TrackId TraceRecorder::add_track(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  tracks_.push_back(std::move(name));
  return TrackId(tracks_.size());
}

std::string TraceRecorder::track_name(TrackId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (id < 1 || size_t(id) > tracks_.size()) return "";
  return tracks_[size_t(id) - 1];
}

bool TraceRecorder::complete(TrackId track, std::string name, std::string category, int64_t start_ns,
                             int64_t dur_ns, std::vector<TraceArg> args) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kComplete;
  e.name = std::move(name);
  e.category = std::move(category);
  e.track = track;
  e.start_ns = start_ns;
  e.dur_ns = std::max<int64_t>(0, dur_ns);
  e.args = std::move(args);
  std::lock_guard<std::mutex> lock(mu_);
  if (track < 1 || size_t(track) > tracks_.size()) return false;
  events_.push_back(std::move(e));
  return true;
}

bool TraceRecorder::instant(TrackId track, std::string name, std::string category, int64_t ts_ns,
                            std::vector<TraceArg> args) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kInstant;
  e.name = std::move(name);
  e.category = std::move(category);
  e.track = track;
  e.start_ns = ts_ns;
  e.args = std::move(args);
  std::lock_guard<std::mutex> lock(mu_);
  if (track < 1 || size_t(track) > tracks_.size()) return false;
  events_.push_back(std::move(e));
  return true;
}

void TraceRecorder::counter(std::string name, int64_t ts_ns, std::vector<TraceArg> series) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kCounter;
  e.name = std::move(name);
  e.category = "counter";
  e.start_ns = ts_ns;
  e.args = std::move(series);
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

size_t TraceRecorder::event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

namespace {

double to_us(int64_t ns) { return double(ns) / 1000.0; }

nlohmann::json args_json(const std::vector<TraceArg>& args) {
  nlohmann::json j = nlohmann::json::object();
  for (const TraceArg& a : args) {
    std::visit([&](const auto& v) { j[a.key] = v; }, a.value);
  }
  return j;
}

}  // namespace

std::string TraceRecorder::to_json(int indent) const {
  std::vector<std::string> tracks;
  std::vector<TraceEvent> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracks = tracks_;
    events = events_;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });

  nlohmann::json out = nlohmann::json::array();
  out.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid_}, {"tid", 0}, {"args", {{"name", process_name_}}}});
  for (size_t i = 0; i < tracks.size(); ++i) {
    const int tid = int(i) + 1;
    out.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid_}, {"tid", tid}, {"args", {{"name", tracks[i]}}}});
    out.push_back(
        {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid_}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  for (const TraceEvent& e : events) {
    nlohmann::json j = {{"name", e.name}, {"cat", e.category}, {"pid", pid_}, {"tid", e.track}, {"ts", to_us(e.start_ns)}};
    if (e.kind == TraceEvent::Kind::kCounter) {
      j["ph"] = "C";
      j["args"] = args_json(e.args);  // a counter without series still needs its args object
      out.push_back(std::move(j));
      continue;
    }
    if (e.kind == TraceEvent::Kind::kComplete) {
      j["ph"] = "X";
      j["dur"] = to_us(e.dur_ns);
    } else {
      j["ph"] = "i";
      j["s"] = "t";  // thread-scoped instant
    }
    if (!e.args.empty()) j["args"] = args_json(e.args);
    out.push_back(std::move(j));
  }
  nlohmann::json doc = {{"traceEvents", std::move(out)},
                        {"displayTimeUnit", "ns"},
                        {"otherData", {{"producer", "tandem"}, {"time_unit_of_ts", "us"}}}};
  return doc.dump(indent);
}

Status TraceRecorder::write_file(const std::string& path) const {
  return write_file_atomically(path, to_json(), "the trace");
}

}  // namespace tandem::trace
