/* The DSP process's parts (runtime_*.c): start-up, the doorbell wait, command validation and the
 * serve loop. */
#ifndef TANDEM_HEXAGON_DSP_RUNTIME_H
#define TANDEM_HEXAGON_DSP_RUNTIME_H

#include <stdint.h>

#include "hexagon/protocol.h"

/* The mapping: the header at base, the pool after it. */
struct thx_pool {
  uint8_t* base;
  uint32_t map_bytes;
};

/* Serves commands until QUIT (returns) or the host disappears (exits). */
void thx_serve(struct thx_pool pool, uint32_t parent_pid);

/* Waits for doorbell != seen and returns the new value (acquire: the command slot's words are
 * read after it). Exits the process if the parent is gone. */
uint32_t thx_wait_doorbell(volatile struct thx_header* h, uint32_t seen, uint32_t parent_pid);

/* Stores completion = seq after every earlier store (outputs, status) and wakes a waiting host. */
void thx_complete(volatile struct thx_header* h, uint32_t seq);

/* Runs the command in the slot; returns its THX_* status. Never touches memory outside the
 * buffers it validated. */
uint32_t thx_run_command(struct thx_pool pool, volatile struct thx_header* h);

/* The buffer `b` checked against the pool: inside [THX_HEADER_BYTES, map_bytes - THX_GUARD_BYTES),
 * offset a multiple of `align`, at least `need` bytes (need is 64-bit: shapes multiply).
 * Returns THX_OK and sets *p, or the error status. */
uint32_t thx_check_buffer(struct thx_pool pool, struct thx_buffer b, uint64_t need, uint32_t align, void** p);

/* 1 when [a.offset, a.offset + a.bytes) and b's overlap (both already checked). */
int thx_overlap(struct thx_buffer a, struct thx_buffer b);

#endif
