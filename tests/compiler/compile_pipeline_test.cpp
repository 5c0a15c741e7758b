// The compiler end to end through its C++ API: llm-dialect text in, programs out, and every
// program run on the npu device's functional executor against a double-precision reference.
#include <gtest/gtest.h>

#include <string>

#include "compiler/api/npu_compiler.h"
#include "npu/executor.h"
#include "npu/oplib/elementwise_check.h"
#include "npu/oplib/kv_cache.h"
#include "npu/oplib/matmul_check.h"
#include "npu/oplib/norm_linear_check.h"
#include "npu/target_model.h"

namespace tandem::compiler {
namespace {

const npu::TargetModel& target() {
  static const npu::TargetModel t = [] {
    auto r = npu::TargetModel::load(std::string(TANDEM_SOURCE_DIR) + "/data/npu/hexagon-v75.json");
    if (!r.ok()) throw std::runtime_error(r.status().message());
    return r.value();
  }();
  return t;
}

std::string linear(int rows, int in, int out, const std::string& quant) {
  const std::string x = "tensor<" + std::to_string(rows) + "x" + std::to_string(in) + "xf16>";
  const std::string w = "tensor<" + std::to_string(out) + "x" + std::to_string(in) + "xf16>";
  const std::string y = "tensor<" + std::to_string(rows) + "x" + std::to_string(out) + "xf16>";
  return "func.func @f(%x: " + x + ", %w: " + w + ") -> " + y + " {\n  %y = llm.linear %x, %w {quant = \"" + quant +
         "\"} : " + x + ", " + w + " -> " + y + "\n  return %y : " + y + "\n}\n";
}

// Compiles one linear and checks the program at the bucket's edges: all rows valid, and one row
// (a short prompt padded up to the bucket).
void compile_and_check(int rows, int in, int out, const std::string& quant, const CompileOptions& o = {}) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(in) + " -> " + std::to_string(out) + " " + quant + " layout " +
               o.layout + " budget " + std::to_string(o.tcm_budget));
  auto m = compile_mlir(linear(rows, in, out, quant), o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->programs.size(), 1u);
  const CompiledProgram& p = m->programs[0];
  EXPECT_EQ(p.spec.n, uint32_t(rows));
  EXPECT_EQ(p.spec.in, uint32_t(in));
  EXPECT_EQ(p.spec.out, uint32_t(out));
  EXPECT_EQ(p.source_quant, quant);
  EXPECT_GT(p.est_cycles, 0);
  const DType source = *dtype_from_name(quant);
  for (uint32_t valid : {uint32_t(rows), 1u}) {
    auto c = npu::oplib::check_matmul_program(p.program, p.spec, source, valid, 42 + valid, target());
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_TRUE(c->ok()) << c->failures << " outputs over tolerance (max ratio " << c->max_error_ratio << ")"
                         << (c->padding_untouched ? "" : ", padding rows written");
    EXPECT_EQ(c->outputs_checked, uint64_t(valid) * out);
  }
}

TEST(CompilePipeline, DecodeGemvMatchesReference) {
  compile_and_check(1, 256, 512, "q4_0");
  compile_and_check(1, 128, 96, "q8_0");
  compile_and_check(1, 100, 70, "f16");  // ragged: padded tiles
}

TEST(CompilePipeline, PrefillGemmMatchesReference) {
  compile_and_check(64, 256, 160, "q4_0");
  compile_and_check(33, 96, 64, "f16");
}

TEST(CompilePipeline, BothWeightLayoutsMatchReference) {
  compile_and_check(8, 128, 96, "q4_0", {"", 0, "interleaved_unpack"});
  compile_and_check(8, 128, 96, "q4_0", {"", 0, "f16_tiles"});
}

TEST(CompilePipeline, ShortTcmBudgetStillCorrect) {
  // Forces two n-blocks of 128 rows, small slabs and one output panel (asymmetric buffering).
  compile_and_check(256, 512, 1024, "f16", {"", 200000, "auto"});
  auto m = compile_mlir(linear(256, 512, 1024, "f16"), {"", 200000, "auto"});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->programs[0].spec.double_buffer);
  EXPECT_FALSE(m->programs[0].spec.double_buffer_out);
}

TEST(CompilePipeline, TilingSearchNeverPricedWorseThanTheLibrary) {
  for (auto [rows, in, out] : {std::tuple{1, 2048, 8192}, std::tuple{128, 2048, 2048}, std::tuple{512, 2048, 512},
                               std::tuple{7, 4096, 1024}}) {
    auto m = compile_mlir(linear(rows, in, out, "q4_0"), {});
    ASSERT_TRUE(m.ok()) << m.status().message();
    const auto& p = m->programs[0];
    npu::oplib::MatmulSpec lib = p.spec;
    lib.double_buffer = lib.double_buffer_out = true;
    auto plan = npu::oplib::plan_matmul(lib, target());
    ASSERT_TRUE(plan.ok());
    EXPECT_LE(p.est_cycles, npu::oplib::estimate_matmul_cycles(lib, *plan, target()) * (1 + 1e-12))
        << rows << "x" << in << "->" << out;
  }
}

TEST(CompilePipeline, EstimateTracksTheTimedExecutor) {
  // The compiler's price (CostModel::pipelined_cycles over the plan) and the executor's timed run
  // (the same CostModel primitives, event by event) must tell the same story.
  for (auto [rows, in, out] : {std::tuple{1, 1024, 2048}, std::tuple{64, 512, 1024}, std::tuple{256, 1024, 512}}) {
    auto m = compile_mlir(linear(rows, in, out, "q4_0"), {});
    ASSERT_TRUE(m.ok());
    npu::Executor ex(target());
    auto rep = ex.run(m->programs[0].program, {false, true});
    ASSERT_TRUE(rep.ok()) << rep.status().message();
    const double ratio = m->programs[0].est_cycles / rep->total_cycles;
    EXPECT_GT(ratio, 0.7) << rows << "x" << in << "->" << out << ": estimate " << m->programs[0].est_cycles << " timed "
                          << rep->total_cycles;
    EXPECT_LT(ratio, 1.3) << rows << "x" << in << "->" << out << ": estimate " << m->programs[0].est_cycles << " timed "
                          << rep->total_cycles;
  }
}

TEST(CompilePipeline, FallbacksAreReported) {
  const std::string text =
      "func.func @f(%x: tensor<1x64xf16>, %p: tensor<1xi32>) -> tensor<1xi32> {\n"
      "  %r = llm.rope %x, %p {head_dim = 64 : i64, theta = 10000.0 : f32} : tensor<1x64xf16>, tensor<1xi32>\n"
      "  %t = llm.sample %r {temperature = 0.0 : f32, top_k = 1 : i64} : tensor<1x64xf16> -> tensor<1xi32>\n"
      "  return %t : tensor<1xi32>\n}\n";
  auto m = compile_mlir(text, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->programs.empty());
  ASSERT_EQ(m->fallbacks.size(), 2u);
  EXPECT_EQ(m->fallbacks[0].op, "llm.rope");
  EXPECT_EQ(m->fallbacks[0].device, "gpu");
  EXPECT_EQ(m->fallbacks[1].device, "cpu");
  EXPECT_GT(m->fallbacks[0].switch_cost_s, 0);
}

std::string kv_append(int rows, int capacity, int heads, int head_dim) {
  const std::string r = "tensor<" + std::to_string(rows) + "x" + std::to_string(heads * head_dim) + "xf16>";
  const std::string c = "tensor<" + std::to_string(capacity) + "x" + std::to_string(heads * head_dim) + "xf16>";
  const std::string q = "tensor<" + std::to_string(rows) + "x" + std::to_string(4 * heads * head_dim) + "xf16>";
  return "func.func @f(%k: " + r + ", %kc: " + c + ", %at: index, %q: " + q + ") -> " + q + " {\n" +
         "  %kc2 = llm.kv_append %kc, %k at %at : " + c + ", " + r + "\n" +
         "  %o = llm.attention %q, %kc2, %kc2 {num_heads = " + std::to_string(4 * heads) + " : i64, num_kv_heads = " +
         std::to_string(heads) + " : i64, head_dim = " + std::to_string(head_dim) + " : i64} : " + q + ", " + c + ", " + c +
         "\n  return %o : " + q + "\n}\n";
}

// A KV append compiles to a program that writes exactly the appended tokens of the cache in the
// layout chosen for its phase, at any position (first token, last slot, across a page boundary).
TEST(CompilePipeline, KvAppendsLandInTheirPhaseLayout) {
  struct Case {
    int rows;
    std::string kv_layout;
    npu::oplib::KvLayout expect;
  };
  const Case cases[] = {{300, "auto", npu::oplib::KvLayout::kTokenMajor},  // prefill: the append dominates
                        {1, "auto", npu::oplib::KvLayout::kHeadMajor},     // decode: per-head reads dominate
                        {300, "head_major", npu::oplib::KvLayout::kHeadMajor},
                        {1, "token_major", npu::oplib::KvLayout::kTokenMajor}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + " rows, kv layout " + c.kv_layout);
    CompileOptions o;
    o.kv_layout = c.kv_layout;
    auto m = compile_mlir(kv_append(c.rows, 1024, 4, 64), o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->programs.size(), 1u);
    const CompiledProgram& p = m->programs[0];
    ASSERT_EQ(p.kind, CompiledProgram::Kind::kKvAppend);
    EXPECT_EQ(p.kv.rows, uint32_t(c.rows));
    EXPECT_EQ(p.kv.phase, c.rows == 1 ? "decode" : "prefill");
    const npu::oplib::KvGeometry& g = p.kv.geometry;
    EXPECT_EQ(g.capacity, 1024u);
    EXPECT_EQ(g.heads, 4u);
    EXPECT_EQ(g.head_dim, 64u);
    EXPECT_EQ(g.layout, c.expect);
    EXPECT_GT(p.est_cycles, 0);
    const uint32_t last = g.capacity - p.kv.rows;
    for (uint32_t at : {0u, last, std::min(last, g.page_tokens - 1)}) {
      auto check = npu::oplib::check_kv_append_program(p.program, g, p.kv.rows, at, 11 + at, target());
      ASSERT_TRUE(check.ok()) << check.status().message();
      EXPECT_TRUE(check->ok()) << "at " << at << ": " << check->wrong << " wrong, " << check->clobbered << " clobbered";
    }
  }
}

// Row ops run on the vector unit: each compiles to a program that matches the fp64 reference,
// with the whole TCM and inside a short budget (smaller chunks).
TEST(CompilePipeline, RowOpsMatchTheReference) {
  const std::string text =
      "func.func @f(%x: tensor<40x320xf16>, %g: tensor<320xf16>, %a: tensor<40x320xf16>) -> tensor<40x320xf16> {\n"
      "  %n = llm.rmsnorm %x, %g {eps = 1.0e-06 : f32} : tensor<40x320xf16>, tensor<320xf16>\n"
      "  %s = llm.swiglu %n, %a : tensor<40x320xf16>\n"
      "  %y = llm.add %s, %x : tensor<40x320xf16>\n"
      "  return %y : tensor<40x320xf16>\n}\n";
  for (int64_t budget : {int64_t(0), int64_t(20000)}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    CompileOptions o;
    o.tcm_budget = budget;
    auto m = compile_mlir(text, o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_TRUE(m->fallbacks.empty());
    ASSERT_EQ(m->programs.size(), 3u);
    const npu::oplib::EltOp expect[] = {npu::oplib::EltOp::kRmsNorm, npu::oplib::EltOp::kSwiglu, npu::oplib::EltOp::kAdd};
    for (size_t i = 0; i < 3; ++i) {
      const CompiledProgram& p = m->programs[i];
      ASSERT_EQ(p.kind, CompiledProgram::Kind::kElementwise);
      EXPECT_EQ(p.elementwise.op, expect[i]);
      EXPECT_EQ(p.elementwise.rows, 40u);
      EXPECT_EQ(p.elementwise.cols, 320u);
      EXPECT_GT(p.est_cycles, 0);
      if (i == 0) {
        EXPECT_FLOAT_EQ(p.elementwise.eps, 1e-6f);
      }
      auto c = npu::oplib::check_elementwise_program(p.program, p.elementwise.op, 40, 320, p.elementwise.eps, 3 + i, target());
      ASSERT_TRUE(c.ok()) << c.status().message();
      EXPECT_TRUE(c->ok()) << p.program.name << ": " << c->failures << " failures, max ratio " << c->max_error_ratio;
      for (const npu::Instr& ins : p.program.code) {
        const bool dma = ins.op == npu::Opcode::kDmaLoad || ins.op == npu::Opcode::kDmaStore;
        if (budget > 0 && dma) {
          EXPECT_LE(ins.dma.tcm + uint64_t(ins.dma.rows - 1) * ins.dma.tcm_stride + ins.dma.row_bytes, uint64_t(budget));
        }
      }
    }
  }
}

// rmsnorm -> two q4_0 projections of the normalized rows (q: 256, k: 128 outputs).
std::string norm_and_projections(int rows, bool norm_also_added) {
  const std::string x = "tensor<" + std::to_string(rows) + "x256xf16>";
  const std::string q = "tensor<" + std::to_string(rows) + "x256xf16>", k = "tensor<" + std::to_string(rows) + "x128xf16>";
  std::string t = "func.func @f(%x: " + x + ", %g: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<128x256xf16>) -> (" +
                  q + ", " + k + ") {\n  %n = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : " + x + ", tensor<256xf16>\n" +
                  "  %q = llm.linear %n, %wq {quant = \"q4_0\"} : " + x + ", tensor<256x256xf16> -> " + q + "\n" +
                  "  %k = llm.linear %n, %wk {quant = \"q4_0\"} : " + x + ", tensor<128x256xf16> -> " + k + "\n";
  if (norm_also_added) {
    t += "  %r = llm.add %q, %n : " + q + "\n  return %r, %k : " + q + ", " + k + "\n}\n";
  } else {
    t += "  return %q, %k : " + q + ", " + k + "\n}\n";
  }
  return t;
}

TEST(CompilePipeline, FusedNormAndProjectionsMatchTheReference) {
  for (int rows : {1, 48}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    CompileOptions o;
    o.fuse = true;
    auto m = compile_mlir(norm_and_projections(rows, false), o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->programs.size(), 1u);  // the norm and both projections in one program
    const CompiledProgram& p = m->programs[0];
    ASSERT_EQ(p.kind, CompiledProgram::Kind::kNormLinear);
    EXPECT_EQ(p.norm_linear.outs, (std::vector<uint32_t>{256, 128}));
    EXPECT_EQ(p.norm_linear.base.n, uint32_t(rows));
    EXPECT_EQ(p.norm_linear.base.in, 256u);
    EXPECT_FLOAT_EQ(p.norm_linear.eps, 1e-5f);
    EXPECT_EQ(p.source_quant, "q4_0");
    for (uint32_t valid : {uint32_t(rows), 1u}) {
      auto c = npu::oplib::check_norm_linear_program(p.program, p.norm_linear, DType::Q4_0, valid, 5 + valid, target());
      ASSERT_TRUE(c.ok()) << c.status().message();
      EXPECT_TRUE(c->ok()) << c->failures << " outputs over tolerance (max ratio " << c->max_error_ratio << ")";
      EXPECT_EQ(c->outputs_checked, uint64_t(valid) * (256 + 128));
    }
    // The fused schedule's price tells the timed executor's story, as a single matmul's does.
    npu::Executor ex(target());
    auto rep = ex.run(p.program, {false, true});
    ASSERT_TRUE(rep.ok()) << rep.status().message();
    EXPECT_GT(p.est_cycles / rep->total_cycles, 0.7) << p.est_cycles << " vs " << rep->total_cycles;
    EXPECT_LT(p.est_cycles / rep->total_cycles, 1.3) << p.est_cycles << " vs " << rep->total_cycles;

    // Unfused, the same graph is a row program and two matmuls.
    auto apart = compile_mlir(norm_and_projections(rows, false), {});
    ASSERT_TRUE(apart.ok()) << apart.status().message();
    ASSERT_EQ(apart->programs.size(), 3u);
    EXPECT_EQ(apart->programs[0].kind, CompiledProgram::Kind::kElementwise);
  }
}

TEST(CompilePipeline, NormReadByANonLinearStaysApart) {
  // The normalized rows are needed in DDR by the add: fusing would lose them.
  CompileOptions o;
  o.fuse = true;
  auto m = compile_mlir(norm_and_projections(16, true), o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (const CompiledProgram& p : m->programs) EXPECT_NE(p.kind, CompiledProgram::Kind::kNormLinear);
  EXPECT_EQ(m->programs.size(), 4u);
}

TEST(CompilePipeline, ErrorsCarryLocations) {
  auto bad = compile_mlir("func.func @f(%x: tensor<1x64xf16>) {\n  %y = llm.bogus %x\n}\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input.mlir:2"), std::string::npos) << bad.status().message();
  auto nofit = compile_mlir(linear(1, 256, 512, "q4_0"), {"", 4096, "auto"});
  ASSERT_FALSE(nofit.ok());
  EXPECT_NE(nofit.status().message().find("no schedule fits the TCM budget of 4096 B"), std::string::npos)
      << nofit.status().message();
  auto notarget = compile_mlir(linear(1, 64, 64, "f16"), {"/nonexistent/t.json", 0, "auto"});
  ASSERT_FALSE(notarget.ok());
  EXPECT_NE(notarget.status().message().find("/nonexistent/t.json"), std::string::npos);
}

}  // namespace
}  // namespace tandem::compiler
