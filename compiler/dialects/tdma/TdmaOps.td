//===- TdmaOps.td - level 3: tiles, TCM buffers, DMA and events ------------------===//
//
// The schedule of an operator on the NPU: which TCM buffers it uses (and, after allocation,
// where), how it is tiled, whether its DMA is double-buffered, and how DMA and compute are
// ordered through events. DDR tensors are still SSA values here; TCM buffers are `index` values
// produced by tdma.alloc.
//
//===----------------------------------------------------------------------===//
#ifndef TANDEM_TDMA_OPS_TD
#define TANDEM_TDMA_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tdma_Dialect : Dialect {
  let name = "tdma";
  let cppNamespace = "::tandem::ir::tdma";
  let summary = "Tiles, TCM buffers, DMA start/wait and events";
  let description = [{
    The third IR level. `tdma.alloc` reserves a TCM buffer (its `offset` is set by
    `tdma-allocate-tcm`); `tdma.matmul_tiles` is a tiled, possibly double-buffered matmul loop
    over such buffers; `tdma.dma_start` / `tdma.dma_wait` / `tdma.signal` are single transfers and
    the events ordering them.
  }];
}

class Tdma_Op<string mnemonic, list<Trait> traits = []> : Op<Tdma_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def Tdma_AllocOp : Tdma_Op<"alloc"> {
  let summary = "reserve a TCM buffer";
  let description = [{
    `role` names the buffer in diagnostics ("x", "w0", ...). `offset` is absent until the TCM
    allocator places the buffer; then it is a multiple of `alignment`.

    Example:
    ```mlir
    %b = tdma.alloc {bytes = 8192 : i64, alignment = 64 : i64, role = "x"} : index
    ```
  }];
  let arguments = (ins I64Attr:$bytes, I64Attr:$alignment, StrAttr:$role, OptionalAttr<I64Attr>:$offset);
  let results = (outs Index:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
}

def Tdma_MatmulTilesOp : Tdma_Op<"matmul_tiles"> {
  let summary = "a tiled matmul loop: X resident per n-block, weight slabs streamed through TCM";
  let description = [{
    Y[M,N] = X[M,K] . W^T with W a pack of `format` tiles. Blocking: `n_block` rows of X stay in
    TCM; weight slabs of `slab_out` x `slab_in` tiles stream through; an output panel of
    `n_block` x `slab_out` tiles accumulates over K. `double_buffer` doubles the weight (and
    unpack) slabs so the next slab's DMA overlaps this slab's compute; `double_buffer_out` doubles
    the output panel so its write-back overlaps the next panel. When TCM is short the tiling pass
    may double one and not the other (asymmetric double buffering).

    Buffers, in order: x, y0 [, y1], w0 [, w1] [, u0 [, u1]] (u: the unpacked f16 slab of a
    quantized format).

    Example:
    ```mlir
    %y = tdma.matmul_tiles %x, %p buffers(%bx, %by0, %by1, %bw0, %bw1, %bu0, %bu1)
        {format = "q4_0", order = "activation_stationary", n_block = 32 : i64, slab_out = 8 : i64,
         slab_in = 4 : i64, double_buffer = true, double_buffer_out = true, est_cycles = 1.0e+04 : f64}
        : tensor<1x128xf16>, tensor<18432xi8> -> tensor<1x256xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[I8]>:$pack, Variadic<Index>:$buffers,
                       StrAttr:$format, StrAttr:$order, I64Attr:$n_block, I64Attr:$slab_out, I64Attr:$slab_in,
                       BoolAttr:$double_buffer, BoolAttr:$double_buffer_out, F64Attr:$est_cycles);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$input `,` $pack `buffers` `(` $buffers `)` attr-dict `:` type($input) `,` type($pack) `->` type($result)";
  let extraClassDeclaration = [{
    // How many TCM buffers this configuration uses (the length `buffers` must have).
    unsigned expectedBufferCount();
  }];
}

def Tdma_NormLinearOp : Tdma_Op<"norm_linear", [AttrSizedOperandSegments]> {
  let summary = "a fused cluster: rmsnorm of the resident X in TCM, then every projection's tiled matmul over it";
  let description = [{
    Y_i[M, N_i] = rmsnorm(X, gain) . W_i^T for each pack W_i. Each n-block of X is loaded once and
    normalized in place in TCM on the vector unit; the projections' weight slabs then stream past
    it one projection after the other (the tdma.matmul_tiles schedule, its blocking and buffering
    attributes, sized for the widest projection). The normalized rows never return to DDR and X
    is read once, not once per projection: what fusing a norm with the linears that read it buys.

    Buffers, in order: those of tdma.matmul_tiles (x, y0 [, y1], w0 [, w1] [, u0 [, u1]]), then
    the gain row and the scalar slot of the norm.

    Example:
    ```mlir
    %q, %k = tdma.norm_linear %x, %g packs(%pq, %pk) buffers(%bx, %by0, %by1, %bw0, %bw1, %bg, %bs)
        {eps = 1.0e-05 : f32, format = "f16", order = "activation_stationary", n_block = 64 : i64,
         slab_out = 8 : i64, slab_in = 8 : i64, double_buffer = true, double_buffer_out = true,
         est_cycles = 1.0e+04 : f64}
        : tensor<64x256xf16>, tensor<256xf16>, (tensor<131072xi8>, tensor<65536xi8>) -> (tensor<64x256xf16>, tensor<64x128xf16>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[F16]>:$input, RankedTensorOf<[F16]>:$gain, Variadic<RankedTensorOf<[I8]>>:$packs,
                       Variadic<Index>:$buffers, F32Attr:$eps, StrAttr:$format, StrAttr:$order, I64Attr:$n_block,
                       I64Attr:$slab_out, I64Attr:$slab_in, BoolAttr:$double_buffer, BoolAttr:$double_buffer_out,
                       F64Attr:$est_cycles);
  let results = (outs Variadic<RankedTensorOf<[F16]>>:$results);
  let assemblyFormat = [{
    $input `,` $gain `packs` `(` $packs `)` `buffers` `(` $buffers `)` attr-dict `:` type($input) `,` type($gain) `,`
    `(` type($packs) `)` `->` `(` type($results) `)`
  }];
}

def Tdma_VectorRowsOp : Tdma_Op<"vector_rows"> {
  let summary = "an elementwise op over rows, chunked through one TCM region on the vector unit";
  let description = [{
    `op` is "rmsnorm" (a = x [n, d], b = gain [d], `eps` its epsilon), "swiglu" (y = silu(a) * b) or "add"
    (y = a + b), with a, b and the result [n, d] fp16 in DDR. Rows pass through the `buffer`
    region in chunks of `rows_per_chunk` rows, double-buffered (the next chunk loads while this
    one computes; a chunk is written back as soon as it is done). `est_cycles` is the timed
    cost of that schedule (the tiling pass chose rows_per_chunk by it).

    Example:
    ```mlir
    %y = tdma.vector_rows "rmsnorm" %x, %g buffers(%r) {eps = 1.0e-05 : f32, rows_per_chunk = 16 : i64,
                                                      est_cycles = 1.0e+03 : f64}
        : tensor<64x256xf16>, tensor<256xf16> -> tensor<64x256xf16>
    ```
  }];
  let arguments = (ins StrAttr:$op, RankedTensorOf<[F16]>:$a, RankedTensorOf<[F16]>:$b, Index:$buffer, F32Attr:$eps,
                       I64Attr:$rows_per_chunk, F64Attr:$est_cycles);
  let results = (outs RankedTensorOf<[F16]>:$result);
  let assemblyFormat = "$op $a `,` $b `buffers` `(` $buffer `)` attr-dict `:` type($a) `,` type($b) `->` type($result)";
}

def Tdma_DmaStartOp : Tdma_Op<"dma_start"> {
  let summary = "start a 2-D DMA between a DDR tensor and a TCM buffer";
  let description = [{
    `rows` rows of `row_bytes`, DDR rows `ddr_stride` apart from byte `ddr_offset`, TCM rows
    `tcm_stride` apart from byte `tcm_offset` of the buffer. Completes into `event`. A store
    writes the DDR tensor in place: at this level a tensor operand names the DDR buffer, and
    program order orders the transfers (they have side effects; nothing reorders them).

    Example:
    ```mlir
    tdma.dma_start load %x to %b {ddr_offset = 0 : i64, ddr_stride = 256 : i64, rows = 8 : i64,
                                  row_bytes = 256 : i64, tcm_stride = 256 : i64, event = 0 : i64}
        : tensor<8x128xf16>
    ```
  }];
  let arguments = (ins StrAttr:$direction, RankedTensorOf<[F16, I8]>:$tensor, Index:$buffer,
                       I64Attr:$ddr_offset, I64Attr:$ddr_stride, I64Attr:$rows, I64Attr:$row_bytes,
                       I64Attr:$tcm_stride, I64Attr:$event, DefaultValuedAttr<I64Attr, "0">:$tcm_offset);
  let assemblyFormat = "$direction $tensor `to` $buffer attr-dict `:` type($tensor)";
}

def Tdma_DmaWaitOp : Tdma_Op<"dma_wait"> {
  let summary = "stall until every transfer started into an event so far has completed";
  let description = [{
    The consumer side of tdma.dma_start: nothing after it (compute on the destination buffer, or a
    new transfer into it) starts before every transfer started into `event` so far has completed.
    tdma-to-npu lowers it to npu.wait; the event number is the static one the schedule assigned.

    Example:
    ```mlir
    tdma.dma_wait {event = 0 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$event);
  let assemblyFormat = "attr-dict";
}

def Tdma_SignalOp : Tdma_Op<"signal"> {
  let summary = "complete an event when the named units have drained what they were given";
  let description = [{
    `units` is a subset of "dma", "matrix", "vector".

    Example:
    ```mlir
    tdma.signal {event = 3 : i64, units = ["matrix"]}
    ```
  }];
  let arguments = (ins I64Attr:$event, StrArrayAttr:$units);
  let assemblyFormat = "attr-dict";
}

#endif  // TANDEM_TDMA_OPS_TD
