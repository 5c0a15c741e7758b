//===- LlmOps.td - level 1: LLM semantics -----------------------------------===//
//
// The model as the compiler first sees it: decoder-layer operators on f16 tensors, with the phase
// (prefill: many rows, GEMM; decode: one row, GEMV) they run in. Nothing here names a memory,
// a tile or a unit; the lower levels decide those.
//
//===----------------------------------------------------------------------===//
#ifndef TANDEM_LLM_OPS_TD
#define TANDEM_LLM_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Llm_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::tandem::ir::llm";
  let summary = "LLM semantics: attention, MLP, RoPE, KV append, quantized linear, RMSNorm, sampling";
  let description = [{
    The first of the compiler's four IR levels. Activations are `tensor<ROWSxDIMxf16>` (rows are
    tokens); weights are `tensor<OUTxINxf16>` shapes whose storage format is the op's `quant`
    attribute ("f16", "q8_0" or "q4_0", GGUF blocks of 32). Every op may carry a `phase`
    ("prefill" or "decode"); `llm-specialize-phase` sets it from the row count and picks each
    linear's dataflow. Ops the NPU cannot run get a `fallback` device ("cpu" or "gpu") from
    `llm-mark-fallback`.
  }];
}

class Llm_Op<string mnemonic, list<Trait> traits = []> : Op<Llm_Dialect, mnemonic, traits> {
  // Every llm op verifies its attributes through the shared checks in LlmDialect.cpp.
  let hasVerifier = 1;
}

def Llm_LinearOp : Llm_Op<"linear", [Pure]> {
  let summary = "quantized linear layer: Y[M,N] = X[M,K] . W[N,K]^T";
  let description = [{
    The weight keeps its storage format in `quant`; the compiler decides whether the NPU unpacks
    the blocks on its vector unit or receives pre-dequantized tiles (`llm-to-state`).
    `dataflow` is "weight_stationary" (the matrix array holds a weight tile, activation tiles stream:
    good when many rows reuse it) or "activation_stationary" (the array holds an activation tile and
    weight tiles stream: the decode GEMV order).

    Example:
    ```mlir
    %y = llm.linear %x, %w {quant = "q4_0", phase = "decode"}
        : tensor<1x2048xf16>, tensor<8192x2048xf16> -> tensor<1x8192xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$weight,
                       DefaultValuedStrAttr<StrAttr, "f16">:$quant,
                       OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$dataflow,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)";
}

def Llm_RmsNormOp : Llm_Op<"rmsnorm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension, scaled by gamma";
  let description = [{
    y[r, :] = x[r, :] * gamma / sqrt(mean(x[r, :]^2) + eps).

    Example:
    ```mlir
    %y = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<8x2048xf16>, tensor<2048xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$gamma, F32Attr:$eps,
                       OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $gamma attr-dict `:` type($input) `,` type($gamma)";
}

def Llm_RopeOp : Llm_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding applied per head";
  let description = [{
    Rotates each pair of the `head_dim`-sized heads of every row by its position's angle
    (base `theta`). The input's row width must be a multiple of `head_dim`, which must be even.
    `style` says which elements pair up: "adjacent_pairs" (x[2i], x[2i+1]: Llama GGUFs, whose
    converter permutes the q/k rows; the default) or "half_split" (x[i], x[i + head_dim/2]:
    Qwen2 and others).

    Example:
    ```mlir
    %q2 = llm.rope %q, %pos {head_dim = 64 : i64, theta = 500000.0 : f32}
        : tensor<8x2048xf16>, tensor<8xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[I32]>:$positions,
                       I64Attr:$head_dim, F32Attr:$theta,
                       DefaultValuedStrAttr<StrAttr, "adjacent_pairs">:$style, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $positions attr-dict `:` type($input) `,` type($positions)";
}

def Llm_HeadNormOp : Llm_Op<"head_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMSNorm of each head of every row on its own (Qwen3's and Gemma 3's q/k norms)";
  let description = [{
    The row is `width / head_dim` heads; each is normalized to unit RMS (plus `eps`) and scaled
    by the same `gamma` of `head_dim` values. It has no NPU lowering yet, so `llm-mark-fallback`
    sends it off the NPU with the cost of the switch.

    Example:
    ```mlir
    %qn = llm.head_norm %q, %gq {eps = 1.0e-06 : f32, head_dim = 128 : i64}
        : tensor<8x2048xf16>, tensor<128xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$gamma, F32Attr:$eps, I64Attr:$head_dim,
                       OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $gamma attr-dict `:` type($input) `,` type($gamma)";
}

def Llm_BiasAddOp : Llm_Op<"bias_add", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "adds a bias vector to every row (a linear's bias: Qwen2's q/k/v)";
  let description = [{
    Y[r, c] = X[r, c] + B[c]. The bias has the row width. It has no NPU lowering yet, so
    `llm-mark-fallback` sends it off the NPU with the cost of the switch.

    Example:
    ```mlir
    %qb = llm.bias_add %q, %bq : tensor<8x896xf16>, tensor<896xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$bias, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
}

def Llm_KvAppendOp : Llm_Op<"kv_append", [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "write new key or value rows into a KV cache at a position";
  let description = [{
    Returns the cache with rows [offset, offset + M) replaced by the M new rows. The cache has
    `max_tokens` rows of the same width as the new rows.

    Example:
    ```mlir
    %c2 = llm.kv_append %cache, %k at %off : tensor<4096x512xf16>, tensor<8x512xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$cache, RankedTensorOf<[F16]>:$rows, Index:$offset,
                       OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$cache `,` $rows `at` $offset attr-dict `:` type($cache) `,` type($rows)";
}

def Llm_AttentionOp : Llm_Op<"attention", [Pure, AllTypesMatch<["query", "result"]>]> {
  let summary = "causal grouped-query attention of new queries over a KV cache";
  let description = [{
    `num_heads` query heads share `num_kv_heads` key/value heads (num_heads a multiple of it), each
    `head_dim` wide; the caches hold up to their row count of tokens. A score is q.k times `scale`
    (absent: 1/sqrt(head_dim)), then `softcap` * tanh(score / softcap) when present (Gemma 2); with
    `window` a query sees only the last `window` positions, itself included (sliding-window layers).

    Example:
    ```mlir
    %o = llm.attention %q, %k, %v {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64}
        : tensor<8x2048xf16>, tensor<4096x512xf16>, tensor<4096x512xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$query, RankedTensorOf<[F16]>:$keys,
                       RankedTensorOf<[F16]>:$values, I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, OptionalAttr<F32Attr>:$scale, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$window, OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$query `,` $keys `,` $values attr-dict `:` type($query) `,` type($keys) `,` type($values)";
}

def Llm_MlpOp : Llm_Op<"mlp", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "gated MLP: down(silu(gate(x)) * up(x))";
  let description = [{
    Three linears of one storage format with the SwiGLU between them.

    Example:
    ```mlir
    %y = llm.mlp %x, %wg, %wu, %wd {quant = "q4_0"}
        : tensor<8x2048xf16>, tensor<8192x2048xf16>, tensor<8192x2048xf16>, tensor<2048x8192xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$w_gate,
                       RankedTensorOf<[F16]>:$w_up, RankedTensorOf<[F16]>:$w_down,
                       DefaultValuedStrAttr<StrAttr, "f16">:$quant, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $w_gate `,` $w_up `,` $w_down attr-dict `:` type($input) `,` type($w_gate) `,` type($w_up) `,` type($w_down)";
}

def Llm_AddOp : Llm_Op<"add", [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise sum (the residual connections)";
  let description = [{
    Elementwise sum of two tensors of one type: the residual connections around attention and
    the MLP. It lowers to a vector-unit row program (tdma.vector_rows); where one row does not fit
    the TCM, llm-mark-fallback sends it to the GPU (`fallback`, with the switch cost).

    Example:
    ```mlir
    %h = llm.add %x, %attn : tensor<8x2048xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$lhs, RankedTensorOf<[F16]>:$rhs, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Llm_SwigluOp : Llm_Op<"swiglu", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "silu(gate) * up, the gated MLP's activation";
  let description = [{
    The gated MLP's activation, result = silu(gate) * up elementwise, with silu(x) = x / (1 + e^-x).
    Operands are the gate and up projections' outputs; the result feeds the down projection. It
    lowers to a vector-unit row program (tdma.vector_rows), with the same TCM fallback as llm.add.

    Example:
    ```mlir
    %a = llm.swiglu %g, %u : tensor<8x8192xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$gate, RankedTensorOf<[F16]>:$up, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Llm_GegluOp : Llm_Op<"geglu", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "gelu(gate) * up, the GELU-gated MLP's activation (Gemma)";
  let description = [{
    result = gelu(gate) * up elementwise, with GELU's tanh approximation
    gelu(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The vector unit's row library has no
    program for it yet, so llm-mark-fallback sends it to the GPU.

    Example:
    ```mlir
    %a = llm.geglu %g, %u : tensor<8x9216xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$gate, RankedTensorOf<[F16]>:$up, OptionalAttr<StrAttr>:$phase,
                       OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Llm_SampleOp : Llm_Op<"sample", [Pure]> {
  let summary = "pick one token per row of logits (greedy at temperature 0, else top-k)";
  let description = [{
    Chooses the next token of every row of logits: the argmax at temperature 0, otherwise a draw
    from the softmax of logits / temperature restricted to the top_k largest. Sampling is data-
    dependent control flow the NPU's static graphs cannot express, so llm-mark-fallback always sends
    it to the CPU, charging the logits' transfer and the cross-unit signal in the cost model.

    Example:
    ```mlir
    %t = llm.sample %logits {temperature = 0.0 : f32, top_k = 40 : i64} : tensor<1x128256xf16> -> tensor<1xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$logits, F32Attr:$temperature, I64Attr:$top_k,
                       OptionalAttr<StrAttr>:$phase, OptionalAttr<StrAttr>:$fallback);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($result)";
}

#endif  // TANDEM_LLM_OPS_TD
