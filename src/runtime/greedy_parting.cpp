#include "runtime/greedy_parting.h"

#include <algorithm>
#include <cmath>

namespace tandem {

Result<GreedyParting> examine_parting(Forward& reference, Forward& other, const std::vector<TokenId>& prompt,
                                      const std::vector<TokenId>& reference_ids, const std::vector<TokenId>& other_ids,
                                      int n_vocab) {
  GreedyParting p;
  const size_t common = std::min(reference_ids.size(), other_ids.size());
  while (p.index < common && reference_ids[p.index] == other_ids[p.index]) ++p.index;
  // One stopped at an end-of-generation token where the other went on: that
  // token parted them.
  if (p.index == common && reference_ids.size() == other_ids.size())
    return InvalidArgument("examine_parting: the two generations are equal");
  std::vector<TokenId> context = prompt;
  context.insert(context.end(), reference_ids.begin(), reference_ids.begin() + std::ptrdiff_t(p.index));
  if (int(context.size()) > std::min(reference.context(), other.context()))
    return InvalidArgument("examine_parting: the prefix is longer than the forwards' context");
  std::vector<float> want(static_cast<size_t>(n_vocab)), got(static_cast<size_t>(n_vocab));
  TANDEM_RETURN_IF_ERROR(reference.eval(context, 0, want.data()));
  TANDEM_RETURN_IF_ERROR(other.eval(context, 0, got.data()));
  double scale = 1e-30, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(double(want[i])));
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
  }
  // The tokens each run chose there; where one run stopped, what its forward
  // ranks first now.
  p.reference_token = p.index < reference_ids.size()
                          ? reference_ids[p.index]
                          : TokenId(std::max_element(want.begin(), want.end()) - want.begin());
  p.other_token =
      p.index < other_ids.size() ? other_ids[p.index] : TokenId(std::max_element(got.begin(), got.end()) - got.begin());
  if (p.reference_token < 0 || p.reference_token >= n_vocab || p.other_token < 0 || p.other_token >= n_vocab)
    return InvalidArgument("examine_parting: a token outside the vocabulary");
  p.margin = (double(want[size_t(p.reference_token)]) - double(want[size_t(p.other_token)])) / scale;
  p.logit_error = worst / scale;
  return p;
}

}  // namespace tandem
