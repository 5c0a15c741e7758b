#include "devices/cpu/cpu_device.h"

#include <array>
#include <chrono>
#include <span>

#include "devices/cpu/attention.h"
#include "devices/cpu/matmul/kv_products.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"
#include "model/gguf/gguf.h"

namespace tandem::devices {
DeviceCaps CpuDevice::caps() const {
  DeviceCaps caps{DeviceKind::kCpu, true, true, false,
                  std::string("matmul isa ") + cpu::matmul_isa() + ", prefill f16 " +
                      cpu::prefill_arithmetic(DType::F16) + ", q4_0 " + cpu::prefill_arithmetic(DType::Q4_0) +
                      ", f16 kv " + cpu::kv_f16_arithmetic() + ", " +
                      std::to_string(pool_.size()) + " threads"};
  caps.one_job_projections = true;
  return caps;
}

bool CpuDevice::supports(const OpCall& call) const { return validate_call(call).ok(); }

void CpuDevice::run(const OpCall& c) {
  const int64_t n = c.out.rows;
  // Elementwise ops walk row by row, since rows may be strided views into wider buffers.
  auto rows = [&](auto&& fn) {
    for (int64_t i = 0; i < n; ++i) fn(i);
  };
  // The same over the pool's threads, each a contiguous range of rows, where the rows are a
  // prompt's (cpu::kMinValuesToSpread). fn must not use the pool itself.
  const bool spread = pool_.size() > 1 && n * c.out.cols >= cpu::kMinValuesToSpread;
  auto row_ranges = [&](auto&& fn) {
    if (!spread) return fn(int64_t(0), n);
    pool_.parallel_for(size_t(n), [&](size_t b, size_t e, int) { fn(int64_t(b), int64_t(e)); });
  };
  auto spread_rows = [&](auto&& fn) {
    row_ranges([&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) fn(i);
    });
  };
  switch (c.kind) {
    case OpKind::kMatmul: {
      cpu::matmul(pool_, view_of(*c.weight, c.row_begin, c.row_end), c.a.data, n, c.a.ld, c.out.data + c.row_begin,
                  c.out.ld);
      break;
    }
    case OpKind::kGetRows: {
      const Weight& w = *c.weight;
      const cpu::WeightView view{w.type, w.data, w.rows, w.cols, w.row_bytes()};
      spread_rows([&](int64_t i) {
        cpu::dequantize_row(view, c.ids[i], c.out.data + i * c.out.ld);
        if (c.scale != 0 && c.scale != 1.0f) cpu::scale_inplace(c.out.data + i * c.out.ld, c.out.cols, c.scale);
      });
      break;
    }
    case OpKind::kRmsNorm:
      if (c.a.ld == c.a.cols && c.out.ld == c.out.cols) {  // contiguous rows: one threaded call
        cpu::rmsnorm(pool_, c.a.data, c.weight->f32(), c.out.data, n, c.out.cols, c.eps);
        break;
      }
      rows([&](int64_t i) {
        cpu::rmsnorm(pool_, c.a.data + i * c.a.ld, c.weight->f32(), c.out.data + i * c.out.ld, 1, c.out.cols, c.eps);
      });
      break;
    case OpKind::kAddBias:
      row_ranges([&](int64_t b, int64_t e) {
        cpu::add_bias(c.out.data + b * c.out.ld, c.weight->f32(), e - b, c.out.cols, c.out.ld);
      });
      break;
    case OpKind::kRope:
      row_ranges([&](int64_t b, int64_t e) {  // row r's angles are row r of the tables
        const int64_t half = c.head_dim / 2;
        cpu::rope_inplace(c.out.data + b * c.out.ld, e - b, c.out.ld, c.n_heads, c.head_dim, c.cos + b * half,
                          c.sin + b * half, c.half_split);
      });
      break;
    case OpKind::kKvStore:
      if (c.paged_kv()) {
        cpu::kv_store_pages(pool_, c.a.data, c.a.ld, c.b.data, c.b.ld, n, c.kv_pages, c.k_pages, c.v_pages, c.n_past);
        break;
      }
      cpu::kv_store(c.a.data, c.a.ld, c.b.data, c.b.ld, n, int(c.a.cols), c.k_cache, c.v_cache, c.context, c.n_past);
      break;
    case OpKind::kAttention: {
      if (c.paged_kv()) {
        cpu::attention_pages(pool_, c.a.data, c.a.ld, c.kv_pages, c.k_pages, c.v_pages, c.out.data, c.out.ld, int(n),
                             c.n_heads, c.n_past, {c.scale, c.softcap, c.window});
        break;
      }
      const int64_t stride = n * (c.n_past + n);
      if (attention_scratch_.size() < size_t(stride * pool_.size())) attention_scratch_.resize(size_t(stride * pool_.size()));
      cpu::attention(pool_, c.a.data, c.a.ld, c.k_cache, c.v_cache, c.out.data, c.out.ld, int(n), c.n_heads,
                     c.n_kv_heads, c.head_dim, c.context, c.n_past, {c.scale, c.softcap, c.window},
                     attention_scratch_.data(), stride);
      break;
    }
    case OpKind::kSwiglu:
      spread_rows(
          [&](int64_t i) { cpu::swiglu_inplace(c.out.data + i * c.out.ld, c.a.data + i * c.a.ld, c.out.cols); });
      break;
    case OpKind::kGeglu:
      spread_rows([&](int64_t i) { cpu::geglu_inplace(c.out.data + i * c.out.ld, c.a.data + i * c.a.ld, c.out.cols); });
      break;
    case OpKind::kAdd:
      spread_rows([&](int64_t i) { cpu::add_inplace(c.out.data + i * c.out.ld, c.a.data + i * c.a.ld, c.out.cols); });
      break;
    case OpKind::kSoftcap:
      spread_rows([&](int64_t i) { cpu::softcap_inplace(c.out.data + i * c.out.ld, c.out.cols, c.softcap); });
      break;
    case OpKind::kNormLinear: {
      // The norm into `out` (a fused op's semantics allow `out` to be written), then every
      // projection from it as one matmul_group: in decode one dispatch for q, k and v.
      OpCall norm = c;
      norm.kind = OpKind::kRmsNorm;
      norm.n_proj = 0;
      run(norm);
      std::array<cpu::MatmulTarget, OpCall::kMaxProjections> targets;
      for (int i = 0; i < c.n_proj; ++i) {
        const OpCall::Projection& p = c.proj[size_t(i)];
        targets[size_t(i)] = {view_of(*p.weight, 0, p.weight->rows), p.out.data, p.out.ld};
      }
      cpu::matmul_group(pool_, std::span(targets.data(), size_t(c.n_proj)), c.out.data, n, c.out.ld);
      break;
    }
  }
}

cpu::WeightView CpuDevice::view_of(const Weight& w, int64_t row_begin, int64_t row_end) {
  // The row range is a contiguous slice of the weight; its outputs start at column row_begin.
  cpu::WeightView view{w.type, w.data + size_t(row_begin) * w.row_bytes(), row_end - row_begin, w.cols, w.row_bytes()};
  if (cpu::decode_precision() == cpu::DecodePrecision::kInt8Activations) {
    view.packed = packed_for_decode(w);
    view.packed_row0 = row_begin;
    view.half_activations = true;  // F16 / BF16: the reduced mode's fp16 activations
  }
  return view;
}

const cpu::PackedWeight* CpuDevice::packed_for_decode(const Weight& w) {
  if (!cpu::can_pack_for_decode(w.type)) return nullptr;
  std::lock_guard<std::mutex> lock(packed_mu_);
  auto it = packed_.find(w.data);
  if (it == packed_.end()) {
    const cpu::WeightView whole{w.type, w.data, w.rows, w.cols, w.row_bytes()};
    it = packed_.emplace(w.data, cpu::pack_for_decode(pool_, whole, &packed_arena_)).first;
    // The packed copy serves decode and prefill from now on: the file's bytes of this weight need
    // not stay resident beside it (they stay readable, for the fp32 oracle and row slices that do
    // not start on a 16-row group, read back from the page cache when touched).
    if (it->second) gguf::release_resident(w.data, size_t(w.rows) * w.row_bytes());
  }
  return it->second.get();
}

Result<std::unique_ptr<Completion>> CpuDevice::submit(const OpCall& c) {
  TANDEM_RETURN_IF_ERROR(validate_call(c));
  const auto t0 = std::chrono::steady_clock::now();
  run(c);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::unique_ptr<Completion>(new FinishedCompletion(Status::Ok(), dt));
}

}  // namespace tandem::devices
