// The accounting of one render against the limits of limits.h: steps, work bytes, the stack, and
// the caller's cancel hook. The budget of the render running on this thread is reachable from
// anywhere (RenderBudget::active()), so the built-ins deep in value.cpp, pystr.cpp and
// json_dump.cpp charge their own work without every signature carrying a budget; outside a render
// (values built from a request's JSON before it) nothing is charged, but sizes are still checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::jinja {

class Object;

// How much of this thread's stack a recursion that starts here may use: at most
// limits::kMaxStackBytes, and at most half of what the thread has left below this frame.
class StackLimit {
 public:
  StackLimit();
  // Throws LimitExceeded naming `what` (and the template's line, when known) when the calling
  // frame is past the limit.
  void check(const char* what, int line = 0) const;
  size_t allowed_bytes() const { return allowed_; }

 private:
  uintptr_t floor_ = 0;  // the lowest frame address allowed (stacks grow down)
  size_t allowed_ = 0;
};

class RenderBudget {
 public:
  // `cancelled` (may be null or empty) is asked every limits::kPollSteps steps.
  explicit RenderBudget(const std::function<bool()>* cancelled);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // Counts n steps; throws past kMaxSteps, when the caller cancels, or past the stack budget.
  void step(int64_t n = 1);
  // Counts bytes built, copied or scanned; throws past kMaxWorkBytes.
  void work(int64_t bytes);
  // Counts bytes a value holds from now on; throws past kMaxLiveBytes. release() gives them
  // back when the value is freed.
  void hold(int64_t bytes);
  void release(int64_t bytes) { live_ -= bytes; }
  // A namespace() made by this render: the only value a template can change, so the only way a
  // value can come to hold itself. ~RenderBudget empties them all, which frees such cycles.
  void track_namespace(const std::shared_ptr<Object>& ns);

  int macro_depth = 0;  // macros running now, one inside another

  // The budget of the render running on this thread, or null.
  static RenderBudget* active();

 private:
  friend class ActiveBudget;
  const std::function<bool()>* cancelled_;
  int64_t steps_ = 0, work_ = 0, live_ = 0;
  StackLimit stack_;  // set when the budget becomes active, where the render starts
  std::vector<std::weak_ptr<Object>> namespaces_;
  RenderBudget* outer_ = nullptr;  // the budget this one hides while active (a nested render)
};

// Makes `budget` the active budget of this thread while alive.
class ActiveBudget {
 public:
  explicit ActiveBudget(RenderBudget& budget);
  ~ActiveBudget();
  ActiveBudget(const ActiveBudget&) = delete;
  ActiveBudget& operator=(const ActiveBudget&) = delete;

 private:
  RenderBudget& budget_;
};

// Charges the active budget, if any.
void charge_steps(int64_t n);
void charge_work(size_t bytes);
// Charges the active budget `bytes` held (and as work), and returns it (null outside a render):
// the value keeps it to give the bytes back with release_bytes when it is freed.
RenderBudget* hold_bytes(size_t bytes);
// Gives held bytes back, to `charged` only while it is the active budget (a value that outlives
// its render's accounting gives back nothing).
void release_bytes(RenderBudget* charged, size_t bytes);
// Refuses a string or list past its limit (always, in a render or not); `what` names the builder.
void check_string_size(size_t bytes, const char* what);
void check_list_size(size_t items, const char* what);
// out += piece, refused past kMaxStringBytes and charged as work.
void append_capped(std::string& out, std::string_view piece, const char* what);

// Bounds a recursion over nested values (printing, comparing, tojson): construct one per level.
class ValueDepthGuard {
 public:
  explicit ValueDepthGuard(const char* what);
  ~ValueDepthGuard();
  ValueDepthGuard(const ValueDepthGuard&) = delete;
  ValueDepthGuard& operator=(const ValueDepthGuard&) = delete;
};

}  // namespace tandem::jinja
