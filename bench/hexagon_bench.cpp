// hexagon_bench: the Hexagon DSP process (qemu-hexagon here) as the host sees it.
//
//   round trip   doorbell rung -> completion flag seen, per method: ping (the protocol alone),
//                a small matmul (decode-sized work that is mostly protocol), a quantize;
//                p50 / p99 over many calls
//   MAC/s        the emulated throughput of the matmul kernels on a decode-shaped (n = 1) and a
//                prefill-shaped (n = 4) matmul, whole calls timed, best of the repeats; beside
//                it the DSP process's own CPU time per call (/proc/<pid>/stat), which a busy
//                machine disturbs less than the wall clock
//   programs     the same shapes as compiled programs (hexagon/codegen, as tandem compile builds
//                them, both loop orders): quantize + multiply in one call, where the generic
//                path's rows above need a quantize call first (skipped without clang-19)
//
// Emulated numbers say how the protocol and the kernels behave under qemu, not how a phone's
// DSP runs. Usage: hexagon_bench [--calls N] [--repeats N] [--json]
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <unistd.h>

#include "hexagon/codegen/dsp_build.h"
#include "hexagon/host/dsp_session.h"
#include "hexagon/reference.h"

using namespace tandem;
using namespace tandem::hexagon;

namespace {

struct Latency {
  std::string method;
  std::string shape;
  int calls = 0;
  double p50_us = 0, p99_us = 0;
};

struct Throughput {
  std::string method;
  uint32_t n = 0, in = 0, out = 0;
  double seconds = 0;  // best call, wall clock
  double macs_per_s = 0;
  double cpu_seconds = 0;  // the DSP process's CPU time per call, over all repeats
};

// utime + stime of a process, in seconds (Linux /proc; 0 if unreadable).
double process_cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  std::istringstream rest(line.substr(line.rfind(')') + 2));  // fields after the command name
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  return double(v[std::min(v.size() - 1, size_t(p * double(v.size())))]) / 1000.0;
}

[[noreturn]] void die(const Status& s) {
  std::fprintf(stderr, "hexagon_bench: %s\n", s.message().c_str());
  std::exit(1);
}

template <class T>
T take(Result<T> r) {
  if (!r.ok()) die(r.status());
  return std::move(r).value();
}

// Buffers of a matmul with deterministic contents (the values do not change the time).
struct MatmulBuffers {
  PoolBuffer w, q, d, y;
};

MatmulBuffers matmul_buffers(DspSession& s, WeightFormat f, uint32_t n, uint32_t in, uint32_t out) {
  MatmulBuffers b{take(s.allocate(weight_bytes(f, out, in))), take(s.allocate(size_t(n) * thx_act_stride(in))),
                  take(s.allocate(size_t(n) * in / 32 * 2)), take(s.allocate(size_t(n) * out * 4))};
  uint8_t* w = s.host(b.w);
  for (uint32_t i = 0; i < b.w.bytes; ++i) w[i] = uint8_t(i * 2654435761u >> 24);
  for (uint32_t i = 0; i < b.w.bytes; i += uint32_t(block_bytes(f))) w[i + 1] = 0x2c;  // scales ~ 2^-4
  std::memset(s.host(b.q), 3, b.q.bytes);
  uint16_t* d = reinterpret_cast<uint16_t*>(s.host(b.d));
  for (uint32_t i = 0; i < b.d.bytes / 2; ++i) d[i] = 0x2c00;
  return b;
}

DspCall matmul_call(WeightFormat f, const MatmulBuffers& b, uint32_t n, uint32_t in, uint32_t out) {
  DspCall c;
  c.method = f == WeightFormat::kQ8_0 ? THX_METHOD_MATMUL_Q8_0 : THX_METHOD_MATMUL_Q4_0;
  c.format = uint32_t(f);
  c.n = n;
  c.in = in;
  c.out = out;
  c.buf[0] = b.w;
  c.buf[1] = b.q;
  c.buf[2] = b.d;
  c.buf[3] = b.y;
  return c;
}

Latency time_calls(DspSession& s, const DspCall& c, const std::string& shape, int calls) {
  for (int i = 0; i < std::min(calls / 10 + 1, 50); ++i) take(s.invoke(c));  // warm: the DSP spinning
  std::vector<int64_t> ns;
  for (int i = 0; i < calls; ++i) {
    const DspReply r = take(s.invoke(c));
    if (r.status != THX_OK) die(Internal(method_name(c.method) + ": " + dsp_status_text(r.status)));
    ns.push_back(r.round_trip_ns);
  }
  return {method_name(c.method), shape, calls, percentile(ns, 0.5), percentile(ns, 0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000, repeats = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--calls" && i + 1 < argc) calls = std::max(10, std::atoi(argv[++i]));
    else if (a == "--repeats" && i + 1 < argc) repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: hexagon_bench [--calls N] [--repeats N] [--json]\n");
      return 2;
    }
  }
  DspSessionOptions o;
  o.pool_bytes = size_t(48) << 20;
  std::unique_ptr<DspSession> s = take(DspSession::open(o));

  std::vector<Latency> latencies;
  DspCall ping;
  ping.method = THX_METHOD_PING;
  latencies.push_back(time_calls(*s, ping, "-", calls));
  {
    const uint32_t n = 1, in = 256, out = 64;
    const MatmulBuffers b = matmul_buffers(*s, WeightFormat::kQ4_0, n, in, out);
    latencies.push_back(time_calls(*s, matmul_call(WeightFormat::kQ4_0, b, n, in, out), "1x256x64", calls / 4));
    s->reset_pool();
  }
  {
    const uint32_t n = 1, in = 4096;
    DspCall c;
    c.method = THX_METHOD_QUANTIZE;
    c.format = THX_FORMAT_Q8_0;
    c.n = n;
    c.in = in;
    c.buf[0] = take(s->allocate(n * in * 4));
    std::memset(s->host(c.buf[0]), 0x3f, c.buf[0].bytes);
    c.buf[1] = take(s->allocate(n * thx_act_stride(in)));
    c.buf[2] = take(s->allocate(n * in / 32 * 2));
    latencies.push_back(time_calls(*s, c, "1x4096", calls / 4));
    s->reset_pool();
  }

  std::vector<Throughput> rates;
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    for (uint32_t n : {1u, 4u}) {
      const uint32_t in = 4096, out = 1024;
      const MatmulBuffers b = matmul_buffers(*s, f, n, in, out);
      const DspCall c = matmul_call(f, b, n, in, out);
      double best = 1e30;
      const double cpu0 = process_cpu_seconds(s->pid());
      for (int r = 0; r < repeats; ++r) best = std::min(best, double(take(s->invoke(c)).round_trip_ns) * 1e-9);
      const double cpu = (process_cpu_seconds(s->pid()) - cpu0) / repeats;
      rates.push_back({method_name(c.method), n, in, out, best, double(n) * in * out / best, cpu});
      s->reset_pool();
    }
  }
  const Status closed = s->close();
  if (!closed.ok()) die(closed);

  // The same shapes as compiled programs.
  std::string programs_skipped;
  if (Result<HexagonCompiler> tc = find_hexagon_compiler(); !tc.ok()) {
    programs_skipped = tc.status().message();
  } else {
    std::vector<HexagonProgramSpec> specs;
    for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0})
      for (uint32_t n : {1u, 4u})
        for (bool ws : {false, true}) specs.push_back({"bench", f, n, 4096, 1024, ws});
    specs.push_back({"latency", WeightFormat::kQ4_0, 1, 256, 64, false});  // the generic 1x256x64's shape
    char dir[] = "/tmp/tandem-hexagon-bench-XXXXXX";
    if (!mkdtemp(dir)) die(IoError("cannot create a temporary folder"));
    const DspBuild built = take(build_dsp_programs(specs, dir, *tc, 2));
    DspSessionOptions po = o;
    po.dsp_binary = built.binary;
    std::unique_ptr<DspSession> p = take(DspSession::open(po));
    {  // round trip of a decode-sized program: quantize + multiply in one call
      const uint32_t i = uint32_t(specs.size() - 1);
      const HexagonProgramSpec& sp = specs[i];
      DspCall c;
      c.method = THX_METHOD_PROGRAM;
      c.arg[0] = i;
      c.n = sp.rows;
      c.in = sp.in;
      c.out = sp.out;
      c.format = uint32_t(sp.format);
      c.buf[0] = take(p->allocate(size_t(sp.rows) * sp.in * 4));
      std::memset(p->host(c.buf[0]), 0x3e, c.buf[0].bytes);
      c.buf[1] = take(p->allocate(program_scratch_bytes(sp)));
      const MatmulBuffers b = matmul_buffers(*p, sp.format, sp.rows, sp.in, sp.out);
      c.buf[2] = b.w;
      c.buf[3] = b.y;
      latencies.push_back(time_calls(*p, c, "1x256x64", calls / 4));
      p->reset_pool();
    }
    for (uint32_t i = 0; i + 1 < specs.size(); ++i) {
      const HexagonProgramSpec& sp = specs[i];
      const PoolBuffer x = take(p->allocate(size_t(sp.rows) * sp.in * 4)), scratch = take(p->allocate(program_scratch_bytes(sp)));
      std::memset(p->host(x), 0x3e, x.bytes);
      const MatmulBuffers b = matmul_buffers(*p, sp.format, sp.rows, sp.in, sp.out);
      double best = 1e30;
      const double cpu0 = process_cpu_seconds(p->pid());
      for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const Status st = p->run_program(i, sp.format, x, scratch, b.w, b.y, sp.rows, sp.in, sp.out);
        if (!st.ok()) die(st);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double cpu = (process_cpu_seconds(p->pid()) - cpu0) / repeats;
      rates.push_back({std::string("program ") + format_name(sp.format) + (sp.weight_stationary ? " ws" : " as"), sp.rows,
                       sp.in, sp.out, best, double(sp.rows) * sp.in * sp.out / best, cpu});
      p->reset_pool();
    }
    if (!p->close().ok()) die(Internal("closing the programs' DSP"));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  if (json) {
    nlohmann::json j;
    for (const Latency& l : latencies)
      j["round_trip"].push_back({{"method", l.method}, {"shape", l.shape}, {"calls", l.calls}, {"p50_us", l.p50_us},
                                 {"p99_us", l.p99_us}});
    for (const Throughput& t : rates)
      j["matmul"].push_back({{"method", t.method}, {"n", t.n}, {"in", t.in}, {"out", t.out}, {"seconds", t.seconds},
                             {"macs_per_s", t.macs_per_s}, {"dsp_cpu_seconds", t.cpu_seconds}});
    if (!programs_skipped.empty()) j["programs_skipped"] = programs_skipped;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("round trip (doorbell -> completion flag), qemu-hexagon\n");
  std::printf("  %-12s %-10s %7s %10s %10s\n", "method", "shape", "calls", "p50 us", "p99 us");
  for (const Latency& l : latencies)
    std::printf("  %-12s %-10s %7d %10.1f %10.1f\n", l.method.c_str(), l.shape.c_str(), l.calls, l.p50_us, l.p99_us);
  std::printf("matmul throughput (emulated HVX + scalar core), best of %d\n", repeats);
  std::printf("  %-15s %15s %10s %10s %12s\n", "method", "n x in x out", "ms", "MMAC/s", "DSP cpu ms");
  for (const Throughput& t : rates) {
    const std::string shape = std::to_string(t.n) + "x" + std::to_string(t.in) + "x" + std::to_string(t.out);
    std::printf("  %-15s %15s %10.2f %10.1f %12.1f\n", t.method.c_str(), shape.c_str(), t.seconds * 1e3,
                t.macs_per_s / 1e6, t.cpu_seconds * 1e3);
  }
  std::printf("(program: compiled by hexagon/codegen, quantize + multiply in one call; as / ws: activation- /\n"
              " weight-stationary loop order)%s%s\n", programs_skipped.empty() ? "" : "\nprograms skipped: ",
              programs_skipped.c_str());
  return 0;
}
