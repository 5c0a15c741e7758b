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

namespace {

Status check_tokens(const ModelConfig& c, std::span<const TokenId> tokens, int n_past, int context) {
  if (tokens.empty()) return InvalidArgument("eval: no tokens");
  if (n_past < 0 || size_t(n_past) + tokens.size() > size_t(context)) {
    return OutOfRange("eval: positions " + std::to_string(n_past) + ".." + std::to_string(n_past + int64_t(tokens.size())) +
                      " exceed the context of " + std::to_string(context) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= c.n_vocab) {
      return InvalidArgument("eval: token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(c.n_vocab) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

Status Forward::eval_sequences(std::span<const SequenceTokens> parts, float* logits) {
  // A forward pass of one sequence runs a part of sequence 0 on its own.
  if (parts.size() != 1 || parts[0].seq != 0) {
    return Unsupported("eval: this forward pass holds one sequence; several at once need a single-device forward");
  }
  return eval(parts[0].tokens, parts[0].n_past, parts[0].logits ? logits : nullptr);
}

Status DecoderForward::eval_sequences(std::span<const SequenceTokens> parts, float* logits) {
  const ModelConfig& c = model_->config();
  if (parts.empty()) return InvalidArgument("eval: no sequences");
  if (parts.size() == 1 && parts[0].seq == 0) return eval(parts[0].tokens, parts[0].n_past, parts[0].logits ? logits : nullptr);
  if (!runs_mixed_chunks()) {
    return Unsupported("eval: several sequences in one pass run on a single device (this forward partitions chunks)");
  }
  std::vector<graph::SequenceRows> rows;
  std::vector<TokenId> ids;
  std::vector<bool> seen(size_t(buffers_.n_seq), false);
  for (const SequenceTokens& p : parts) {
    if (p.seq < 0 || p.seq >= buffers_.n_seq || seen[size_t(p.seq)]) {
      return InvalidArgument("eval: sequence " + std::to_string(p.seq) + " is outside 0.." +
                             std::to_string(buffers_.n_seq - 1) + " or given twice");
    }
    seen[size_t(p.seq)] = true;
    TANDEM_RETURN_IF_ERROR(check_tokens(c, p.tokens, p.n_past, buffers_.context));
    rows.push_back({p.seq, int(ids.size()), int(p.tokens.size()), p.n_past, p.logits});
    ids.insert(ids.end(), p.tokens.begin(), p.tokens.end());
  }
  if (ids.size() > size_t(buffers_.max_batch)) {
    return InvalidArgument("eval: " + std::to_string(ids.size()) + " tokens in one pass exceed the batch of " +
                           std::to_string(buffers_.max_batch));
  }
  graph::prepare_sequences(c, buffers_, ids.data(), rows);
  return run_ops(graph::build_sequences_forward(*model_, buffers_, rows, logits));
}

Status DecoderForward::eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits) {
  const ModelConfig& c = model_->config();
  TANDEM_RETURN_IF_ERROR(check_tokens(c, tokens, n_past, buffers_.context));
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
