#include <cstdio>

#include "devices/registry.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"

namespace tandem::cli {

Command add_devices(CLI::App& app) {
  auto threads = std::make_shared<int>(default_threads());
  CLI::App* sub = app.add_subcommand("devices", "List the devices tandem can run on, with their capabilities");
  sub->add_option("-t,--threads", *threads, "CPU threads, 1..1024")->transform(integer_in(1, 1024));
  return {sub, [threads]() -> Status {
            std::printf("| %-11s | %-4s | %-9s | %-14s | %-5s | %s\n", "device", "kind", "available", "shapes",
                        "async", "detail");
            std::printf("|-------------|------|-----------|----------------|-------|-------\n");
            const std::vector<devices::DeviceListing> listed = devices::list_devices(nullptr, *threads);
            for (const devices::DeviceListing& d : listed) {
              if (!d.available) {
                std::printf("| %-11s | %-4s | %-9s | %-14s | %-5s | %s\n", d.name.c_str(), "-", "no", "-", "-",
                            d.unavailable.c_str());
                continue;
              }
              std::printf("| %-11s | %-4s | %-9s | %-14s | %-5s | %s%s\n", d.name.c_str(),
                          devices::device_kind_name(d.caps.kind), "yes",
                          d.caps.dynamic_shapes ? "dynamic" : "static graphs", d.caps.async ? "yes" : "no",
                          d.caps.unified_memory ? "unified memory; " : "", d.caps.detail.c_str());
            }
            // What each is and when to use it (the registry's line).
            std::printf("\n");
            for (const devices::DeviceListing& d : listed) std::printf("%-11s %s\n", d.name.c_str(), d.about.c_str());
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
