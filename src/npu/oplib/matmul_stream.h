// The matmul schedule's instruction stream, shared by the plain matmul (matmul.cpp) and the fused
// rmsnorm -> projections cluster (norm_linear.cpp). Internal to the operator library.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "npu/oplib/matmul.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

// One projection of a matmul program: its out dim and the program buffers of its weight pack and
// output.
struct Projection {
  uint32_t out = 0, w_buf = 0, y_buf = 0;
};
// The fused rmsnorm prologue: the gain's program buffer and epsilon (the plan's g_addr / s_addr
// hold the gain row and the scalar slot).
struct NormPrologue {
  uint32_t gain_buf = 0;
  float eps = 0;
};

Status check_matmul_spec(const MatmulSpec& s);
Status check_matmul_plan(const MatmulPlan& p, const TargetModel& t);
// Cycles of loading every n-block of X (split over the DMA channels).
double x_load_cycles(const MatmulPlan& p, const TargetModel& t);

// Emits the schedule over X (program buffer bx) for every projection in turn inside each n-block,
// with the prologue (norm != nullptr) normalizing each loaded n-block in place; sets num_events.
// The caller declared the buffers.
Status emit_projections(const MatmulSpec& s, const std::vector<Projection>& proj, const NormPrologue* norm,
                        const MatmulPlan& p, const TargetModel& t, uint32_t bx, Program& prog);

}  // namespace tandem::npu::oplib
