/* The serve loop and the methods of THX_HANDLE_KERNELS (protocol.h lists them with their
 * buffers). Each command is read from the slot once into locals, so a host that rewrites the
 * slot mid-command cannot change what was validated. */
#include "hexagon/protocol.h"
#include "kernels.h"
#include "program_table.h"
#include "runtime.h"

struct command {
  uint32_t handle, method, n, in, out, format;
  struct thx_buffer buf[THX_MAX_BUFFERS];
  uint32_t arg0;
};

static struct command read_command(volatile struct thx_header* h) {
  struct command c;
  c.handle = h->handle;
  c.method = h->method;
  c.n = h->n;
  c.in = h->in;
  c.out = h->out;
  c.format = h->format;
  for (int i = 0; i < THX_MAX_BUFFERS; ++i) {
    c.buf[i].offset = h->buf[i].offset;
    c.buf[i].bytes = h->buf[i].bytes;
  }
  c.arg0 = h->arg[0];
  return c;
}

static int shape_ok(uint32_t n, uint32_t in) { return n != 0 && in != 0 && in % THX_BLOCK == 0; }

/* An output buffer must not overlap any other buffer of the command. */
static int outputs_apart(const struct command* c, const int* is_output, int count) {
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j)
      if (i != j && (is_output[i] || is_output[j]) && thx_overlap(c->buf[i], c->buf[j])) return 0;
  return 1;
}

static uint32_t run_quantize(struct thx_pool pool, const struct command* c) {
  if (c->format != THX_FORMAT_Q8_0 || !shape_ok(c->n, c->in)) return THX_E_ARGS;
  if (c->in > THX_MAX_IN) return THX_E_TOO_LARGE;
  void *x, *q, *d;
  uint32_t s;
  const uint64_t n = c->n, in = c->in;
  if ((s = thx_check_buffer(pool, c->buf[0], n * in * 4u, 4, &x)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[1], n * thx_act_stride(c->in), THX_ACT_ROW_ALIGN, &q)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[2], n * (in / THX_BLOCK) * 2u, 2, &d)) != THX_OK) return s;
  const int outputs[3] = {0, 1, 1};
  if (!outputs_apart(c, outputs, 3)) return THX_E_ARGS;
  thx_quantize_rows((const float*)x, (int8_t*)q, (uint16_t*)d, c->n, c->in);
  return THX_OK;
}

static uint32_t run_matmul(struct thx_pool pool, const struct command* c, uint32_t format) {
  if (c->format != format || !shape_ok(c->n, c->in) || c->out == 0) return THX_E_ARGS;
  if (c->in > THX_MAX_IN) return THX_E_TOO_LARGE;
  const uint32_t block_bytes = format == THX_FORMAT_Q8_0 ? THX_Q8_0_BLOCK_BYTES : THX_Q4_0_BLOCK_BYTES;
  const uint64_t n = c->n, in = c->in, out = c->out, nb = in / THX_BLOCK;
  void *w, *q, *d, *y;
  uint32_t s;
  if ((s = thx_check_buffer(pool, c->buf[0], out * nb * block_bytes, 1, &w)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[1], n * thx_act_stride(c->in), THX_ACT_ROW_ALIGN, &q)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[2], n * nb * 2u, 2, &d)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[3], n * out * 4u, 4, &y)) != THX_OK) return s;
  const int outputs[4] = {0, 0, 0, 1};
  if (!outputs_apart(c, outputs, 4)) return THX_E_ARGS;
  thx_matmul(format, (const uint8_t*)w, (const int8_t*)q, (const uint16_t*)d, (float*)y, c->n, c->in, c->out);
  return THX_OK;
}

static uint32_t run_program(struct thx_pool pool, const struct command* c) {
  if (&thx_program_count == 0 || thx_programs == 0) return THX_E_METHOD; /* a binary without programs */
  if (c->arg0 >= thx_program_count) return THX_E_ARGS;
  const struct thx_program* p = &thx_programs[c->arg0];
  if (c->n != p->rows || c->in != p->in || c->out != p->out || c->format != p->format) return THX_E_ARGS;
  const uint32_t block_bytes = p->format == THX_FORMAT_Q8_0 ? THX_Q8_0_BLOCK_BYTES : THX_Q4_0_BLOCK_BYTES;
  const uint64_t n = p->rows, in = p->in, out = p->out, nb = in / THX_BLOCK;
  const uint64_t q_bytes = n * thx_act_stride(p->in);
  void *x, *scratch, *w, *y;
  uint32_t s;
  if ((s = thx_check_buffer(pool, c->buf[0], n * in * 4u, 4, &x)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[1], q_bytes + n * nb * 2u, THX_ACT_ROW_ALIGN, &scratch)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[2], out * nb * block_bytes, 1, &w)) != THX_OK) return s;
  if ((s = thx_check_buffer(pool, c->buf[3], n * out * 4u, 4, &y)) != THX_OK) return s;
  const int outputs[4] = {0, 1, 0, 1};
  if (!outputs_apart(c, outputs, 4)) return THX_E_ARGS;
  p->run((const float*)x, (int8_t*)scratch, (uint16_t*)((uint8_t*)scratch + q_bytes), (const uint8_t*)w, (float*)y);
  return THX_OK;
}

uint32_t thx_run_command(struct thx_pool pool, volatile struct thx_header* h) {
  const struct command c = read_command(h);
  if (c.handle != THX_HANDLE_KERNELS) return THX_E_HANDLE;
  switch (c.method) {
    case THX_METHOD_PING:
      h->result[0] = THX_VERSION;
      h->result[1] = c.arg0;
      return THX_OK;
    case THX_METHOD_QUANTIZE:
      return run_quantize(pool, &c);
    case THX_METHOD_MATMUL_Q8_0:
      return run_matmul(pool, &c, THX_FORMAT_Q8_0);
    case THX_METHOD_MATMUL_Q4_0:
      return run_matmul(pool, &c, THX_FORMAT_Q4_0);
    case THX_METHOD_PROGRAM:
      return run_program(pool, &c);
    case THX_METHOD_QUIT:
      return THX_OK;
    default:
      return THX_E_METHOD;
  }
}

void thx_serve(struct thx_pool pool, uint32_t parent_pid) {
  volatile struct thx_header* h = (volatile struct thx_header*)pool.base;
  uint32_t seen = h->accepted;
  for (;;) {
    const uint32_t seq = thx_wait_doorbell(h, seen, parent_pid);
    h->accepted = seq;
    const uint32_t method = h->method, handle = h->handle;
    h->status = thx_run_command(pool, h);
    thx_complete(h, seq);
    seen = seq;
    if (handle == THX_HANDLE_KERNELS && method == THX_METHOD_QUIT) return;
  }
}
