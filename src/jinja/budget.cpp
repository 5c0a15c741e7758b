#include "jinja/budget.h"

#include <pthread.h>

#include <algorithm>

#include "jinja/error.h"
#include "jinja/limits.h"
#include "jinja/value.h"

namespace tandem::jinja {
namespace {

thread_local RenderBudget* active_budget = nullptr;
thread_local int value_depth = 0;

std::string mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

uintptr_t frame_address() { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)); }

}  // namespace

StackLimit::StackLimit() {
  const uintptr_t here = frame_address();
  allowed_ = limits::kMaxStackBytes;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0 && reinterpret_cast<uintptr_t>(low) < here)
      allowed_ = std::min(allowed_, (here - reinterpret_cast<uintptr_t>(low)) / 2);
    pthread_attr_destroy(&attr);
  } else {
    allowed_ = limits::kMaxStackBytes / 8;  // unknown: assume a small thread stack
  }
  floor_ = here - allowed_;
}

void StackLimit::check(const char* what, int line) const {
  if (frame_address() < floor_)
    throw LimitExceeded("nested past " + std::to_string(allowed_ >> 10) + " KiB of stack (" + what + ")", line);
}

RenderBudget::RenderBudget(const std::function<bool()>* cancelled) : cancelled_(cancelled) {}

RenderBudget::~RenderBudget() {
  // Emptying every namespace breaks each cycle through one (only namespaces change after they
  // are made), so a template that stored a namespace in itself leaks nothing.
  for (const std::weak_ptr<Object>& w : namespaces_)
    if (std::shared_ptr<Object> ns = w.lock()) ns->clear();
}

RenderBudget* RenderBudget::active() { return active_budget; }

void RenderBudget::step(int64_t n) {
  const int64_t before = steps_;
  steps_ += n;
  if (steps_ > limits::kMaxSteps)
    fail_limit("the template ran past " + std::to_string(limits::kMaxSteps) + " steps (a runaway loop or recursion)");
  if (steps_ / limits::kPollSteps != before / limits::kPollSteps && cancelled_ && *cancelled_ && (*cancelled_)())
    throw RenderCancelled("the render was cancelled");
  stack_.check("macros, blocks and expressions inside each other");
}

void RenderBudget::work(int64_t bytes) {
  work_ += bytes;
  if (work_ > limits::kMaxWorkBytes)
    fail_limit("the template built or scanned past " + mib(size_t(limits::kMaxWorkBytes)) +
         " of text and lists (a runaway loop)");
}

void RenderBudget::hold(int64_t bytes) {
  live_ += bytes;
  if (live_ > limits::kMaxLiveBytes)
    fail_limit("the template's values held past " + mib(size_t(limits::kMaxLiveBytes)) + " at once");
}

void RenderBudget::track_namespace(const std::shared_ptr<Object>& ns) { namespaces_.push_back(ns); }

ActiveBudget::ActiveBudget(RenderBudget& budget) : budget_(budget) {
  budget_.outer_ = active_budget;
  budget_.stack_ = StackLimit();
  active_budget = &budget_;
}

ActiveBudget::~ActiveBudget() { active_budget = budget_.outer_; }

void charge_steps(int64_t n) {
  if (active_budget) active_budget->step(n);
}

void charge_work(size_t bytes) {
  if (active_budget) active_budget->work(int64_t(bytes));
}

RenderBudget* hold_bytes(size_t bytes) {
  if (!active_budget) return nullptr;
  active_budget->work(int64_t(bytes));
  active_budget->hold(int64_t(bytes));
  return active_budget;
}

void release_bytes(RenderBudget* charged, size_t bytes) {
  if (charged && charged == active_budget) charged->release(int64_t(bytes));
}

void check_string_size(size_t bytes, const char* what) {
  if (bytes > limits::kMaxStringBytes) fail_limit(std::string(what) + ": a string past " + mib(limits::kMaxStringBytes));
}

void check_list_size(size_t items, const char* what) {
  if (items > limits::kMaxListItems)
    fail_limit(std::string(what) + ": a list past " + std::to_string(limits::kMaxListItems) + " items");
}

void append_capped(std::string& out, std::string_view piece, const char* what) {
  check_string_size(out.size() + piece.size(), what);
  charge_work(piece.size());
  out += piece;
}

ValueDepthGuard::ValueDepthGuard(const char* what) {
  if (++value_depth > limits::kMaxValueDepth) {
    --value_depth;
    fail_limit(std::string(what) + ": a value nested past " + std::to_string(limits::kMaxValueDepth) + " levels");
  }
}

ValueDepthGuard::~ValueDepthGuard() { --value_depth; }

}  // namespace tandem::jinja
