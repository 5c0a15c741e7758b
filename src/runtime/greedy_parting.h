// Where two greedy generations of one prompt part, what the two forwards'
// logits say about it. Devices that compute a matmul in different arithmetic
// (fp32 on OpenCL, fp16 on the NPU) may pick a different token where the
// reference's top two nearly tie; that is a right answer only if their logits
// at that step agree with the reference's within the arithmetic's budget. A
// wrong scale, row or split shows as an error of the logits' own size.
#pragma once

#include <vector>

#include "core/status.h"
#include "runtime/forward.h"

namespace tandem {

struct GreedyParting {
  size_t index = 0;                              // the first generated token that differs
  TokenId reference_token = 0, other_token = 0;  // what each run chose there
  // The reference forward's logit(reference_token) - logit(other_token) there,
  // over its largest |logit|: how near a tie the two choices are in the
  // reference's arithmetic.
  double margin = 0;
  double logit_error = 0;  // largest |other - reference| over the vocabulary,
                           // over the reference's largest |logit|
};

// `reference` and `other` each evaluate prompt + the common prefix from
// position 0 (their KV is overwritten); the generations must differ somewhere
// within their common length or in length.
Result<GreedyParting> examine_parting(Forward& reference, Forward& other, const std::vector<TokenId>& prompt,
                                      const std::vector<TokenId>& reference_ids, const std::vector<TokenId>& other_ids,
                                      int n_vocab);

}  // namespace tandem
