#include "runtime/task_graph.h"

#include <sstream>

namespace tandem {

int TaskGraph::add(Task t) {
  t.id = int(tasks_.size());
  tasks_.push_back(std::move(t));
  return tasks_.back().id;
}

std::string task_shape_key(const Task& t, const std::string& unit) {
  std::ostringstream k;
  k << unit;
  if (t.call) {
    const graph::OpCall& c = *t.call;
    k << ':' << graph::op_kind_name(c.kind) << ':' << c.out.rows << 'x' << c.out.cols;
    if (c.weight) k << ':' << (c.row_end - c.row_begin) << 'x' << c.weight->cols;
  }
  return k.str();
}

Status TaskGraph::verify() const {
  for (const Task& t : tasks_) {
    if (t.call.has_value() == bool(t.host_step)) {
      return Internal("task graph: task " + std::to_string(t.id) + " (" + t.label + ") must have exactly one of a call or a host step");
    }
    if (t.call && t.device == "host") return Internal("task graph: task " + std::to_string(t.id) + " is a kernel on 'host'");
    if (!t.fallback_device.empty() && (!t.call || t.fallback_device == "host" || t.fallback_device == t.device)) {
      return Internal("task graph: task " + std::to_string(t.id) + " (" + t.label + ") has fallback device '" +
                      t.fallback_device + "', which must be another device for a kernel");
    }
    for (int d : t.deps) {
      if (d < 0 || d >= t.id) {
        return Internal("task graph: task " + std::to_string(t.id) + " (" + t.label + ") depends on task " +
                        std::to_string(d) + ", which does not come before it");
      }
    }
  }
  return Status::Ok();
}

std::string TaskGraph::dump() const {
  std::ostringstream s;
  for (const Task& t : tasks_) {
    s << t.id << " [" << t.device << (t.fallback_device.empty() ? "" : "|" + t.fallback_device) << "] " << t.label << " <-";
    for (int d : t.deps) s << ' ' << d;
    s << '\n';
  }
  return s.str();
}

}  // namespace tandem
