//===- StateOps.td - level 2: state and layout --------------------------------===//
//
// What lives in memory between operators and in which layout: packed weights (tiles, block
// format with interleaved scales or pre-dequantized f16), KV cache pages and the map from token
// positions to pages. Operators here name their operands' layouts and their dataflow order, but
// not yet TCM buffers or DMA.
//
//===----------------------------------------------------------------------===//
#ifndef TANDEM_STATE_OPS_TD
#define TANDEM_STATE_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def State_Dialect : Dialect {
  let name = "state";
  let cppNamespace = "::tandem::ir::state";
  let summary = "State and layout: weight packs with scales, KV pages, position maps";
  let description = [{
    The second IR level. Packed buffers are `tensor<BYTESxi8>` whose size the verifiers recompute
    from the layout attributes, so a layout and its buffer can never disagree.
  }];
}

class State_Op<string mnemonic, list<Trait> traits = []> : Op<State_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def State_WeightPackOp : State_Op<"weight_pack", [Pure]> {
  let summary = "a weight matrix packed into matrix-unit tiles";
  let description = [{
    `layout` is one of
      * "interleaved_unpack": the storage blocks keep their scale next to their quants (GGUF
        q8_0/q4_0 blocks), arranged tile by tile; the NPU DMAs the blocks and unpacks them to f16
        on the vector unit feeding the matrix tiles (W4A16's unpack pipeline);
      * "f16_tiles": dequantized once at pack time to f16 tiles (no vector work, more DMA bytes).
    `tile` is the matrix unit's tile edge; every dimension is padded to a multiple of it.

    Example:
    ```mlir
    %p = state.weight_pack %w {quant = "q4_0", layout = "interleaved_unpack", tile = 32 : i64}
        : tensor<256x128xf16> -> tensor<18432xi8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$weight, StrAttr:$quant, StrAttr:$layout, I64Attr:$tile);
  let results = (outs RankedTensorOf<[I8]>:$pack);
  let assemblyFormat = "$weight attr-dict `:` type($weight) `->` type($pack)";
  let extraClassDeclaration = [{
    // Bytes of the pack for this weight shape and layout (what the result type must hold).
    static int64_t packBytes(int64_t out, int64_t in, llvm::StringRef elementFormat, int64_t tile);
    // The format of the packed elements: the storage quant, or "f16" for f16_tiles.
    llvm::StringRef elementFormat() { return getLayout() == "f16_tiles" ? "f16" : getQuant(); }
  }];
}

def State_MatmulOp : State_Op<"matmul", [Pure]> {
  let summary = "Y[M,N] = X[M,K] . W^T over a packed weight, with a chosen dataflow";
  let description = [{
    `format` is the pack's element format ("f16", "q8_0", "q4_0"); `order` "weight_stationary"
    or "activation_stationary" (see llm.linear); `phase` as in the llm dialect.

    Example:
    ```mlir
    %y = state.matmul %x, %p {out = 256 : i64, format = "q4_0", tile = 32 : i64,
                              order = "activation_stationary", phase = "decode"}
        : tensor<1x128xf16>, tensor<18432xi8> -> tensor<1x256xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[I8]>:$pack, I64Attr:$out,
                       StrAttr:$format, I64Attr:$tile, StrAttr:$order, StrAttr:$phase);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $pack attr-dict `:` type($input) `,` type($pack) `->` type($result)";
}

def State_KvPagesOp : State_Op<"kv_pages", [Pure, AllTypesMatch<["source", "cache"]>]> {
  let summary = "a KV cache viewed as pages of page_tokens tokens in a per-phase layout";
  let description = [{
    `source` is the persistent cache (a function argument: the state lives across launches);
    the result is the same cache with its layout made explicit. `layout` "token_major" (rows are
    tokens: a prefill append is one contiguous transfer per page) or "head_major" (each head's
    tokens contiguous: attention streaming one head at a time reads a page in one transfer).
    `heads` KV heads of width / heads values each; a page is the DMA granularity (at most
    page_tokens tokens of one head per transfer). llm-to-state picks the layout and page size on
    the target's cost model for the phase of the append that uses it.

    Example:
    ```mlir
    %kv = state.kv_pages %kc {pages = 32 : i64, page_tokens = 128 : i64, width = 512 : i64,
                              heads = 8 : i64, layout = "head_major"} : tensor<4096x512xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$source, I64Attr:$pages, I64Attr:$page_tokens, I64Attr:$width,
                       I64Attr:$heads, StrAttr:$layout);
  let results = (outs RankedTensorOf<[F16]>:$cache);
  let assemblyFormat = "$source attr-dict `:` type($cache)";
}

def State_KvWriteOp : State_Op<"kv_write", [AllTypesMatch<["cache", "result"]>]> {
  let summary = "append token rows to a paged KV cache at a position";
  let description = [{
    Writes the M new rows (token-major, as the projections produce them) into tokens
    [position, position + M) of `cache`, in the cache's layout. `cache` must come from
    state.kv_pages (the layout and page size it states are what the write follows). The
    position is dynamic: a compiled append serves every position whose rows fit the cache (the
    runtime binds the cache at the position's address; see npu/oplib/kv_cache.h).

    Example:
    ```mlir
    %kv2 = state.kv_write %kv, %k at %pos {phase = "prefill"} : tensor<4096x512xf16>, tensor<64x512xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$cache, RankedTensorOf<[F16]>:$rows, Index:$position, StrAttr:$phase);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$cache `,` $rows `at` $position attr-dict `:` type($cache) `,` type($rows)";
  let extraClassDeclaration = [{
    KvPagesOp pages() { return getCache().getDefiningOp<KvPagesOp>(); }
  }];
}

def State_PositionMapOp : State_Op<"position_map", [Pure]> {
  let summary = "token positions to (page, row in page) pairs";
  let description = [{
    Maps each token position of a bucket to (page index, row within the page) in a paged KV cache
    with `page_tokens` tokens per page: map[i] = (positions[i] / page_tokens, positions[i] %
    page_tokens). It is the state level's record of where dynamic positions land: inside a bucket
    only the positions (and so the valid length, KV base and page table) change, never the
    compiled program. The verifier requires a positive page size and a map of shape [N, 2] for N
    positions.

    Example:
    ```mlir
    %m = state.position_map %pos {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x2xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$positions, I64Attr:$page_tokens);
  let results = (outs RankedTensorOf<[I32]>:$map);
  let assemblyFormat = "$positions attr-dict `:` type($positions) `->` type($map)";
}

#endif  // TANDEM_STATE_OPS_TD
