/* The compiled programs a DSP binary carries (tandem compile links them in: codegen/
 * kernel_source.h). The generic binary has none: the table's symbols are weak, so a binary
 * without programs links and answers THX_METHOD_PROGRAM with THX_E_METHOD. */
#ifndef TANDEM_HEXAGON_DSP_PROGRAM_TABLE_H
#define TANDEM_HEXAGON_DSP_PROGRAM_TABLE_H

#include <stdint.h>

/* x [rows][in] fp32 in; q, d: the scratch (quantized rows, then their scales); w the weights;
 * y [rows][out] fp32 out. */
typedef void (*thx_program_fn)(const float* x, int8_t* q, uint16_t* d, const uint8_t* w, float* y);

struct thx_program {
  uint32_t rows, in, out, format;
  thx_program_fn run;
};

extern const struct thx_program thx_programs[] __attribute__((weak));
extern const uint32_t thx_program_count __attribute__((weak));

#endif
