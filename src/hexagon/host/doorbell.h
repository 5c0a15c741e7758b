// The host's half of the doorbell + completion-flag handshake (protocol.h): ringing with a
// release store and a futex wake, waiting with acquire loads that spin briefly, then yield, then
// sleep on the futex -- checking all along that the DSP process is still alive.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace tandem::hexagon {

// *doorbell = seq (release: the command slot written before it is visible first), then a
// futex wake for a DSP asleep on the word.
void ring_doorbell(uint32_t* doorbell, uint32_t seq);

enum class WaitOutcome { kDone, kDead, kTimedOut };

// Waits until *flag == seq (acquire). `alive` is asked every ~0.1 ms once the first spin is
// over and after every futex wait; false ends the wait (kDead). The stages: ~20 us of polling
// (a command that is a ping ends inside it), sched_yield until 1 ms (the DSP may need this
// core), then futex waits of 1 ms (the DSP wakes the word after each completion; the timeout
// bounds how late a death or the deadline is seen).
WaitOutcome wait_for_flag(uint32_t* flag, uint32_t seq, std::chrono::steady_clock::time_point deadline,
                          const std::function<bool()>& alive);

}  // namespace tandem::hexagon
