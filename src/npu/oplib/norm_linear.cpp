#include "npu/oplib/norm_linear.h"

#include <algorithm>
#include <cmath>

#include "npu/cost_model.h"
#include "npu/oplib/matmul_stream.h"
#include "npu/oplib/round_up.h"

namespace tandem::npu::oplib {

MatmulSpec NormLinearSpec::projection(size_t i) const {
  MatmulSpec m = base;
  m.out = outs.at(i);
  return m;
}

MatmulSpec NormLinearSpec::widest() const {
  MatmulSpec m = base;
  m.out = outs.empty() ? 0 : *std::max_element(outs.begin(), outs.end());
  return m;
}

namespace {

Status check_norm_linear(const NormLinearSpec& s) {
  if (s.outs.empty()) return InvalidArgument("norm_linear: needs at least one projection");
  for (size_t i = 0; i < s.outs.size(); ++i) TANDEM_RETURN_IF_ERROR(check_matmul_spec(s.projection(i)));
  if (!(s.eps > 0) || !std::isfinite(s.eps)) return InvalidArgument("norm_linear: eps must be > 0");
  return Status::Ok();
}
}  // namespace

NormPrologueBytes norm_prologue_bytes(uint32_t in, const TargetModel& t) {
  const uint64_t align = t.tcm.alignment_bytes;
  return {round_up_u32(uint64_t(round_up_u32(in, uint32_t(t.matrix.tile_dim))) * 2, align), align};
}

Result<MatmulPlan> block_norm_linear(const NormLinearSpec& s, const TargetModel& t, uint32_t nb, uint32_t R, uint32_t kc) {
  TANDEM_RETURN_IF_ERROR(check_norm_linear(s));
  TANDEM_ASSIGN_OR_RETURN(MatmulPlan p, block_matmul(s.widest(), t, nb, R, kc));
  const NormPrologueBytes b = norm_prologue_bytes(s.base.in, t);
  p.g_addr = uint32_t(p.tcm_used);
  p.s_addr = uint32_t(p.tcm_used + b.gain);
  p.tcm_used = round_up_u32(p.tcm_used + b.gain + b.scalars, t.tcm.alignment_bytes);
  return p;
}

Result<Program> emit_norm_linear(const NormLinearSpec& s, const MatmulPlan& p, const TargetModel& t) {
  TANDEM_RETURN_IF_ERROR(check_norm_linear(s));
  TANDEM_RETURN_IF_ERROR(check_matmul_plan(p, t));
  const MatmulSpec& m = s.base;
  Program prog;
  prog.name = std::string("norm_linear_") + std::string(dtype_name(m.wtype)) + "_n" + std::to_string(m.n) + "_in" +
              std::to_string(m.in);
  for (uint32_t o : s.outs) prog.name += "_" + std::to_string(o);
  const uint32_t bx = prog.add_buffer("x", uint64_t(m.n) * m.in * 2, false);
  const uint32_t bg = prog.add_buffer("g", uint64_t(m.in) * 2, false);
  std::vector<Projection> proj(s.outs.size());
  for (size_t i = 0; i < s.outs.size(); ++i) {
    proj[i].out = s.outs[i];
    proj[i].w_buf = prog.add_buffer("w" + std::to_string(i), packed_weight_bytes(s.projection(i), t), false);
  }
  for (size_t i = 0; i < s.outs.size(); ++i)
    proj[i].y_buf = prog.add_buffer("y" + std::to_string(i), uint64_t(m.n) * s.outs[i] * 2, true);
  const NormPrologue norm{bg, s.eps};
  TANDEM_RETURN_IF_ERROR(emit_projections(m, proj, &norm, p, t, bx, prog));
  return prog;
}

double estimate_norm_linear_cycles(const NormLinearSpec& s, const MatmulPlan& p, const TargetModel& t) {
  const CostModel cost(t);
  const double x_load = x_load_cycles(p, t);
  // Per row: the sum of squares and the scaling pass, issued one after the other.
  const double norm = double(s.base.n) * (cost.vector_cycles(VecOp::kSumSq, s.base.in) +
                                          cost.vector_cycles(VecOp::kRmsApply, s.base.in) +
                                          2 * cost.issue_cycles(Opcode::kVec));
  double cycles = norm;
  for (size_t i = 0; i < s.outs.size(); ++i) {
    const MatmulSpec m = s.projection(i);
    auto own = block_matmul(m, t, p.nb, std::min(p.R, round_up_u32(m.out, p.T) / p.T), p.kc);
    if (!own.ok()) return INFINITY;
    cycles += estimate_matmul_cycles(m, *own, t) - x_load;  // X is loaded once, for every projection
  }
  return cycles + x_load;
}

}  // namespace tandem::npu::oplib
