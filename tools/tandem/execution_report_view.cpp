#include "tools/tandem/execution_report_view.h"

#include <cstdio>

namespace tandem::cli {

nlohmann::json execution_json(const ExecutionReport& r) {
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [name, u] : r.devices) {
    devices[name] = {{"tasks", u.tasks}, {"busy_s", u.busy_seconds}, {"device_s", u.device_seconds}, {"queued_ahead", u.queued_ahead}};
  }
  return {{"forward", r.forward},
          {"pool_bytes", r.pool_bytes},
          {"pool_regions", r.pool_regions},
          {"activation_slots", r.activation_slots},
          {"slot_layers", r.slot_layers},
          {"host_bytes_copied", r.host_bytes_copied},
          {"device_bytes_copied", r.device_bytes_copied},
          {"device_bytes_converted", r.device_bytes_converted},
          {"npu_graphs", r.npu_graphs},
          {"npu_graphs_compiled", r.npu_graphs_compiled},
          {"npu_graphs_not_cached", r.npu_graphs_not_cached},
          {"npu_first_not_cached", r.npu_first_not_cached},
          {"npu_prepare_s", r.npu_prepare_seconds},
          {"npu_prepare_fallbacks", r.npu_prepare_fallbacks},
          {"npu_run_fallbacks", r.npu_run_fallbacks},
          {"reruns_behind_failure", r.reruns_behind_failure},
          {"placed_elsewhere", r.placed_elsewhere},
          {"npu_row_ops", r.npu_row_ops},
          {"npu_fused", r.npu_fused},
          {"kv", r.kv},
          {"kv_bytes", r.kv_bytes},
          {"npu_kv_appends", r.npu_kv_appends},
          {"first_placement", r.first_placement},
          {"device_note", r.device_note},
          {"plan", r.plan},
          {"sync", r.sync},
          {"flag_devices", r.flag_devices},
          {"fast_waits", r.fast_waits},
          {"fast_fallbacks", r.fast_fallbacks},
          {"blocking_by_choice", r.blocking_by_choice},
          {"blocking_no_free_core", r.blocking_no_free_core},
          {"tasks", r.tasks},
          {"queued_ahead", r.queued_ahead},
          {"devices", devices}};
}

std::string execution_table(const ExecutionReport& r) {
  std::string out;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("forward         %s\n", r.forward.c_str());
  add("memory pool     %.2f MiB in one block, %llu regions; %llu activation slots reused across %d layers\n",
      double(r.pool_bytes) / (1024.0 * 1024.0), (unsigned long long)r.pool_regions,
      (unsigned long long)r.activation_slots, r.slot_layers);
  add("bytes copied    %llu host (padding merges), %llu host<->device; %llu converted fp32<->fp16 (the npu's staging: "
      "the pool's activations are fp32)\n",
      (unsigned long long)r.host_bytes_copied, (unsigned long long)r.device_bytes_copied,
      (unsigned long long)r.device_bytes_converted);
  if (!r.kv.empty() || r.kv_bytes > 0) {
    out += "kv cache        " + r.kv;
    if (r.npu_kv_appends > 0) out += "; " + std::to_string(r.npu_kv_appends) + " appends by the npu (the compiler's programs)";
    add("; %.1f MiB (%llu bytes)\n", double(r.kv_bytes) / (1 << 20), (unsigned long long)r.kv_bytes);
  }
  if (!r.sync.empty()) {
    add("npu graphs      %llu prepared (%llu compiled, from the compile cache), %.1f ms to build (modeled on the emulated npu, measured on a real one); fallbacks to "
        "the GPU: %llu at prepare, %llu at run\n",
        (unsigned long long)r.npu_graphs, (unsigned long long)r.npu_graphs_compiled, r.npu_prepare_seconds * 1e3,
        (unsigned long long)r.npu_prepare_fallbacks, (unsigned long long)r.npu_run_fallbacks);
    if (r.npu_graphs_not_cached > 0) {
      out += "npu programs    " + std::to_string(r.npu_graphs_compiled) + " from the compile cache, " +
             std::to_string(r.npu_graphs_not_cached) + " built at run time; first not cached: " + r.npu_first_not_cached + "\n";
    }
    if (r.npu_row_ops > 0 || r.npu_fused > 0) {
      add("npu row ops     %llu rmsnorm/swiglu/add kernels on the npu beside the matmuls it runs whole, %llu fused "
          "norm+projection programs (the compiler's placement, with --npu-cache)\n",
          (unsigned long long)r.npu_row_ops, (unsigned long long)r.npu_fused);
    }
    if (r.reruns_behind_failure > 0) {
      add("reruns          %llu kernels queued behind a failed one: results discarded, run again\n",
          (unsigned long long)r.reruns_behind_failure);
    }
    if (!r.device_note.empty()) out += "devices         " + r.device_note + "\n";
    if (!r.plan.empty()) out += "plan            " + r.plan;
    if (r.placed_elsewhere > 0) {
      out += "placement       " + std::to_string(r.placed_elsewhere) + " ops past their role's device; first: " +
             r.first_placement + "\n";
    }
    add("sync            %s: %llu fast waits, %llu fell back to blocking; %llu blocking by measured choice, %llu on "
        "devices computing on every host core; completion flags polled for: %s\n",
        r.sync.c_str(), (unsigned long long)r.fast_waits, (unsigned long long)r.fast_fallbacks,
        (unsigned long long)r.blocking_by_choice, (unsigned long long)r.blocking_no_free_core,
        r.flag_devices.empty() ? "none" : r.flag_devices.c_str());
    add("queue-ahead     %llu of %llu tasks queued behind a same-device dependency still in flight (waits only at "
        "cross-device edges)\n",
        (unsigned long long)r.queued_ahead, (unsigned long long)r.tasks);
  }
  if (!r.devices.empty()) {
    add("| %-8s | %8s | %12s | %12s | %14s |\n", "device", "tasks", "queued ahead", "busy ms", "device ms");
    add("| %-8s | %8s | %12s | %12s | %14s |\n", "--------", "-------:", "-----------:", "-----------:",
        "-------------:");
    for (const auto& [name, u] : r.devices) {
      add("| %-8s | %8llu | %12llu | %12.1f | %14.1f |\n", name.c_str(), (unsigned long long)u.tasks,
          (unsigned long long)u.queued_ahead, u.busy_seconds * 1e3, u.device_seconds * 1e3);
    }
  }
  return out;
}

}  // namespace tandem::cli
