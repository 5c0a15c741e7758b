// The house's layering, checked from the #include lines of the sources: each component of src/
// may include only itself and the components below it, so no two components include each other
// (no cycle, however it is split into libraries). The compiler sits beside the stack and may
// use only what it lowers from and to; nothing in src/ includes MLIR or LLVM. The order is
// docs/ARCHITECTURE.md's: core <- model <- graph <- devices <- runtime <- sim/planner/report <- tools.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// A component's level: it may include components of lower levels (and itself).
const std::map<std::string, int>& levels() {
  static const std::map<std::string, int> l = {
      {"core", 0},                                  // status, dtypes, quant blocks, memory pool, threads
      {"model", 1},                                 // GGUF, architectures, tokenizers
      {"jinja", 1},                                 // the Jinja interpreter for chat templates
      {"hexagon", 1},                               // the Hexagon DSP: its oracle, kernels, process, host side
      {"graph", 2}, {"reference", 2},               // the ops and the decoder as an op list; the fp64 oracle
      {"npu", 3},                                   // the NPU target, programs, executor, fusion model of the decoder
      {"compile_cache", 4},                         // compiled NPU programs on disk
      {"devices", 5},                               // the device contract and cpu / opencl / npu
      {"runtime", 6},                               // forward passes, partition, drivers, sync, trace, session
      {"sim", 7}, {"buckets", 7},                   // the SoC simulator; length buckets
      {"chat", 7},                                  // chat templates and conversations over a session
      {"planner", 8},                               // profilers, cost DB, solver, plans
      {"server", 8},                                // the OpenAI-compatible server: slots, batching, HTTP
      {"report", 9},                                // the papers' evaluations
  };
  return l;
}

// What the MLIR compiler (compiler/) may use of src/: the graph it lowers, the NPU it targets, and
// the Hexagon code generator its last lowering emits through (hexagon/codegen).
const std::set<std::string>& compiler_may_use() {
  static const std::set<std::string> s = {"core", "model", "graph", "npu", "compile_cache", "buckets", "hexagon"};
  return s;
}

struct Violation {
  std::string file;
  int line;
  std::string text;
};

// The first path element of an #include line's file ("devices" for #include "devices/device.h"),
// or "" when the line includes nothing or a file without a folder.
std::string included_component(const std::string& line) {
  size_t at = line.find_first_not_of(" \t");
  if (at == std::string::npos || line[at] != '#') return "";
  at = line.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos || line.compare(at, 7, "include") != 0) return "";
  at = line.find_first_of("<\"", at + 7);
  if (at == std::string::npos) return "";
  const size_t end = line.find_first_of(">\"", at + 1), slash = line.find('/', at + 1);
  if (slash == std::string::npos || end == std::string::npos || slash > end) return "";
  return line.substr(at + 1, slash - at - 1);
}

std::vector<fs::path> sources_under(const fs::path& root) {
  std::vector<fs::path> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".inc")) out.push_back(e.path());
  }
  return out;
}

// Every violation of the layering in the tree at `root` (src/ and compiler/ under it).
std::vector<Violation> check_tree(const fs::path& root) {
  std::vector<Violation> v;
  auto scan = [&](const fs::path& file, const std::string& component) {
    std::ifstream in(file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const std::string target = included_component(line);
      if (target.empty()) continue;
      const std::string where = fs::relative(file, root).string();
      if (target == "mlir" || target == "llvm") {
        if (component != "compiler") v.push_back({where, n, line + "  (MLIR/LLVM outside compiler/)"});
        continue;
      }
      if (target == component || !levels().count(target)) continue;  // itself, or a system/compiler-local header
      if (component == "compiler") {
        if (!compiler_may_use().count(target)) v.push_back({where, n, line + "  (the compiler may not use " + target + ")"});
      } else if (levels().at(target) >= levels().at(component)) {
        v.push_back({where, n, line + "  (" + component + " is level " + std::to_string(levels().at(component)) +
                                    ", " + target + " level " + std::to_string(levels().at(target)) + ")"});
      }
    }
  };
  for (const fs::path& f : sources_under(root / "src")) {
    const std::string component = fs::relative(f, root / "src").begin()->string();
    if (!levels().count(component)) {
      v.push_back({fs::relative(f, root).string(), 0, "component '" + component + "' has no place in the layering"});
      continue;
    }
    scan(f, component);
  }
  for (const fs::path& f : sources_under(root / "compiler")) scan(f, "compiler");
  return v;
}

std::string describe(const std::vector<Violation>& v) {
  std::string s;
  for (const Violation& x : v) s += "  " + x.file + ":" + std::to_string(x.line) + ": " + x.text + "\n";
  return s;
}

TEST(Layering, EveryIncludeGoesDownTheStack) {
  const std::vector<Violation> v = check_tree(TANDEM_SOURCE_DIR);
  EXPECT_TRUE(v.empty()) << v.size() << " includes break the layering:\n" << describe(v);
}

TEST(Layering, TheSourcesAreWhereTheTestLooks) {
  // A test that found no files would pass on anything.
  EXPECT_GT(sources_under(fs::path(TANDEM_SOURCE_DIR) / "src").size(), 100u);
  EXPECT_GT(sources_under(fs::path(TANDEM_SOURCE_DIR) / "compiler").size(), 20u);
}

// The checker itself, on a tree made for it: an include going up, one between two components of
// the same level, MLIR in src/, and the compiler reaching into the runtime are each reported;
// includes down the stack are not.
TEST(Layering, TheCheckerReportsWhatGoesUp) {
  const fs::path root = fs::temp_directory_path() / ("tandem_layering_" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [&](const std::string& rel, const std::string& body) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << body;
  };
  write("src/graph/a.h", "#include \"core/status.h\"\n#include \"model/model.h\"\n#include <vector>\n");
  write("src/graph/b.cpp", "#include \"graph/a.h\"\n#include \"devices/device.h\"\n");  // up: devices
  write("src/graph/c.h", "#include \"reference/x.h\"\n");                                 // same level
  write("src/core/d.cpp", "#include <mlir/IR/Builders.h>\n");                             // MLIR in src/
  write("src/runtime/e.cpp", "#include \"devices/device.h\"\n#include \"graph/op.h\"\n");  // fine
  write("compiler/api/f.cpp", "#include \"mlir/IR/Builders.h\"\n#include \"graph/op.h\"\n#include \"runtime/session.h\"\n");
  const std::vector<Violation> v = check_tree(root);
  fs::remove_all(root);
  std::set<std::string> files;
  for (const Violation& x : v) files.insert(x.file + ":" + std::to_string(x.line));
  EXPECT_EQ(files, (std::set<std::string>{"src/graph/b.cpp:2", "src/graph/c.h:1", "src/core/d.cpp:1", "compiler/api/f.cpp:3"}))
      << describe(v);
}

}  // namespace
