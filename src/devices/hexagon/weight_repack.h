// A weight's rows in a block format the Hexagon kernels read: Q4_0 and Q8_0 as the model carries
// them (copied as they are), every other type (f32, f16, bf16, the K-quants, Q4_1/Q5_x, IQ4)
// dequantized by ggml's arithmetic and requantized to Q8_0 by ggml's reference quantizer.
//
// Why Q8_0 for the rest: v66 HVX has integer vectors only (no qfloat before v68), so every weight
// the DSP multiplies is int8 levels times a block scale. Q8_0 keeps 8 bits per value (an f16
// weight loses about 2^-8 of each block's largest |w|; a K-quant's 2-6 bit levels pass through
// exactly up to the block scale's fp16 rounding), at 8.5 bits per value: 1.9x a 4.5-bit K-quant's
// bytes in the DSP's pool, the price of formats its kernels cannot unpack.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "hexagon/reference.h"
#include "model/model.h"

namespace tandem::devices::hexagon_npu {

// The format the DSP holds a weight of type t in.
hexagon::WeightFormat dsp_format(DType t);

// Why a weight of `cols` inputs cannot be multiplied on the DSP ("" when it can).
std::string why_not_repackable(const Weight& w);

// Rows [row_begin, row_end) of w in dsp_format(w.type), written to out (weight_bytes of them).
Status repack_rows(const Weight& w, int64_t row_begin, int64_t row_end, uint8_t* out);

}  // namespace tandem::devices::hexagon_npu
