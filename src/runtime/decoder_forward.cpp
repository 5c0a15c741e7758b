#include "runtime/decoder_forward.h"

#include <algorithm>

namespace tandem {

Result<ForwardShape> ForwardShape::resolve(const ModelConfig& c, int context, int max_batch) {
  if (context < 0 || context > (1 << 20)) {
    return InvalidArgument("context: " + std::to_string(context) + " is out of range (0..1048576; 0: the model's, at most 4096)");
  }
  if (max_batch < 1) return InvalidArgument("batch: " + std::to_string(max_batch) + " must be >= 1");
  ForwardShape s;
  s.context = context > 0 ? context : std::min(c.context_length, 4096);
  s.max_batch = std::min(max_batch, s.context);
  return s;
}

Status DecoderForward::eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits) {
  const ModelConfig& c = model_->config();
  if (tokens.empty()) return InvalidArgument("eval: no tokens");
  if (n_past < 0 || size_t(n_past) + tokens.size() > size_t(buffers_.context)) {
    return OutOfRange("eval: positions " + std::to_string(n_past) + ".." + std::to_string(n_past + int64_t(tokens.size())) +
                      " exceed the context of " + std::to_string(buffers_.context) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= c.n_vocab) {
      return InvalidArgument("eval: token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(c.n_vocab) + ")");
    }
  }
  for (size_t done = 0; done < tokens.size();) {
    const int n = int(std::min(tokens.size() - done, size_t(buffers_.max_batch)));
    const bool last = done + size_t(n) == tokens.size();
    // Without all_logits only the final chunk computes logits (its last row).
    float* out = all_logits ? logits + done * size_t(c.n_vocab) : (last ? logits : nullptr);
    const int pos = n_past + int(done);
    graph::prepare_chunk(c, buffers_, tokens.data() + done, n, pos);
    TANDEM_RETURN_IF_ERROR(run_ops(graph::build_forward(*model_, buffers_, n, pos, out, all_logits)));
    done += size_t(n);
  }
  return Status::Ok();
}

}  // namespace tandem
