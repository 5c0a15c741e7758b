#include "hexagon/codegen/dsp_build.h"

#include <filesystem>
#include <future>

#include "core/file_io.h"
#include "hexagon/codegen/run_tool.h"

namespace tandem::hexagon {

namespace fs = std::filesystem;

Result<DspBuild> build_dsp_programs(const std::vector<HexagonProgramSpec>& specs, const std::string& dir,
                                    const HexagonCompiler& tc, unsigned jobs) {
  for (const HexagonProgramSpec& s : specs)
    if (std::string why = why_not_lowerable(s); !why.empty()) return Unsupported("hexagon: program " + s.name + ": " + why);
  std::error_code ec;
  for (const char* sub : {"src", "obj"}) {
    fs::remove_all(fs::path(dir) / sub, ec);  // an earlier build's programs are not this one's
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return IoError(dir + "/" + sub + ": cannot create: " + ec.message());
  }
  DspBuild b;
  std::vector<std::string> texts;
  for (uint32_t i = 0; i < specs.size(); ++i) {
    b.sources.push_back(dir + "/src/program_" + std::to_string(i) + ".c");
    texts.push_back(kernel_source(specs[i], i));
  }
  b.sources.push_back(dir + "/src/programs.c");
  texts.push_back(program_table_source(specs));
  for (size_t i = 0; i < b.sources.size(); ++i) {
    TANDEM_RETURN_IF_ERROR(write_file_atomically(b.sources[i], texts[i], "a Hexagon program's source"));
    b.objects.push_back(dir + "/obj/" + fs::path(b.sources[i]).stem().string() + ".o");
  }
  const std::string include = tc.lib_dir + "/include";
  auto compile = [&](size_t i) {
    std::vector<std::string> argv = {tc.clang};
    argv.insert(argv.end(), tc.cflags.begin(), tc.cflags.end());
    argv.insert(argv.end(), {"-I" + include, "-I" + include + "/dsp", "-c", b.sources[i], "-o", b.objects[i]});
    return run_tool(argv);
  };
  // jobs at a time: each clang is one process, the machine's cores are the limit.
  jobs = std::max(1u, jobs);
  for (size_t at = 0; at < b.sources.size(); at += jobs) {
    std::vector<std::future<Status>> running;
    for (size_t i = at; i < std::min(b.sources.size(), at + jobs); ++i) running.push_back(std::async(std::launch::async, compile, i));
    for (auto& r : running) TANDEM_RETURN_IF_ERROR(r.get());
  }
  b.binary = dir + "/tandem_hexagon_dsp";
  std::vector<std::string> link = {tc.lld, "-static", "-e", "_start"};
  link.insert(link.end(), tc.runtime_objects.begin(), tc.runtime_objects.end());
  link.insert(link.end(), b.objects.begin(), b.objects.end());
  link.insert(link.end(), {"-o", b.binary});
  TANDEM_RETURN_IF_ERROR(run_tool(link));
  return b;
}

}  // namespace tandem::hexagon
