/* The slot masks of hvx_util.h (GNU range designators; the rest of each row is 0). */
#include "hvx_util.h"

#define THX_SLOT32(k) {[32 * (k)... 32 * (k) + 31] = 0xff}
#define THX_SLOT16(k) {[16 * (k)... 16 * (k) + 15] = 0xff}

__attribute__((aligned(128))) const uint8_t thx_slot_mask32[4][128] = {THX_SLOT32(0), THX_SLOT32(1), THX_SLOT32(2),
                                                                       THX_SLOT32(3)};

__attribute__((aligned(128))) const uint8_t thx_slot_mask16[8][128] = {
    THX_SLOT16(0), THX_SLOT16(1), THX_SLOT16(2), THX_SLOT16(3),
    THX_SLOT16(4), THX_SLOT16(5), THX_SLOT16(6), THX_SLOT16(7)};
