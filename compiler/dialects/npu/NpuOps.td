//===- NpuOps.td - level 4: target instructions ---------------------------------===//
//
// One op per instruction of the npu device's Program (src/npu/program.h): DMA load/store, matrix
// tile ops and vector ops on TCM addresses, event wait/signal and barriers, inside an
// `npu.program` that declares its DDR buffers. `npu-export` turns each program into the
// device's Program format one instruction per op; `npu.launch` is the host's call of a program.
//
//===----------------------------------------------------------------------===//
#ifndef TANDEM_NPU_OPS_TD
#define TANDEM_NPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Npu_Dialect : Dialect {
  let name = "npu";
  let cppNamespace = "::tandem::ir::npu";
  let summary = "NPU target instructions: matrix and vector ops on TCM addresses, DMA, events, barriers";
  let description = [{
    The fourth IR level, in one-to-one correspondence with the npu device's Program: addresses
    are TCM byte offsets, DDR operands are indices into the program's `npu.buffer` list.
  }];
}

class Npu_Op<string mnemonic, list<Trait> traits = []> : Op<Npu_Dialect, mnemonic, traits>;

def Npu_ProgramOp : Npu_Op<"program", [Symbol, SymbolTable, NoTerminator, SingleBlock, IsolatedFromAbove]> {
  let summary = "one static NPU graph: DDR buffer declarations and an instruction list";
  let description = [{
    A program is what the npu device runs: a symbol whose body first declares its DDR buffers
    (npu.buffer, in the order npu.launch binds them) and then lists instructions that the scalar
    core issues in order to the DMA channels, the matrix arrays and the vector unit. The units run
    asynchronously; `events` counts the completion events the instructions may name, and ordering
    between units exists only through npu.signal / npu.wait / npu.barrier. The verifier checks that
    buffers precede the first instruction, that every event is below `events` (at most the Program
    format's limit), and that every DMA names a declared buffer (stores only into writable ones).
    npu-export turns the op into the device's Program format and runs the device's own check
    against the TargetModel (TCM and DDR bounds, alignment, waits on events nothing completes).

    Example:
    ```mlir
    npu.program @mm events 15 {
      npu.buffer "x" {bytes = 256 : i64, writable = false}
      npu.buffer "y" {bytes = 256 : i64, writable = true}
      npu.dma_load {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 256 : i64, rows = 1 : i64,
                    row_bytes = 256 : i64, tcm = 0 : i64, tcm_stride = 256 : i64, event = 0 : i64}
      npu.wait {event = 0 : i64}
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$events);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `events` $events attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Npu_BufferOp : Npu_Op<"buffer", [HasParent<"ProgramOp">]> {
  let summary = "declare the program's next DDR buffer (bound by the host at launch)";
  let description = [{
    Buffers are numbered in declaration order from 0; DMA ops name them by number.

    Example:
    ```mlir
    npu.buffer "w" {bytes = 18432 : i64, writable = false}
    ```
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$bytes, BoolAttr:$writable);
  let assemblyFormat = "$name attr-dict";
}

class Npu_DmaOp<string mnemonic> : Npu_Op<mnemonic, [HasParent<"ProgramOp">]> {
  let summary = "2-D DMA between DDR buffer `buffer` and TCM";
  let description = [{
    `rows` rows of `row_bytes`; DDR rows `ddr_stride` apart from `ddr_offset`, TCM rows
    `tcm_stride` apart from `tcm`; completes into `event`.

    Example:
    ```mlir
    npu.dma_load {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 2 : i64,
                  row_bytes = 64 : i64, tcm = 0 : i64, tcm_stride = 64 : i64, event = 0 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$buffer, I64Attr:$ddr_offset, I64Attr:$ddr_stride, I64Attr:$rows,
                       I64Attr:$row_bytes, I64Attr:$tcm, I64Attr:$tcm_stride, I64Attr:$event);
  let assemblyFormat = "attr-dict";
}
def Npu_DmaLoadOp : Npu_DmaOp<"dma_load">;
def Npu_DmaStoreOp : Npu_DmaOp<"dma_store">;

def Npu_MmaOp : Npu_Op<"mma", [HasParent<"ProgramOp">]> {
  let summary = "matrix tile op on array `unit`: C (+)= A x B, fp16 tiles at TCM addresses";
  let description = [{
    B is the operand the array holds; `tb` reads it transposed, `tc` reads/writes C transposed,
    `acc` accumulates into C. Row pitches in bytes.

    Example:
    ```mlir
    npu.mma {unit = 0 : i64, a = 0 : i64, lda = 64 : i64, b = 2048 : i64, ldb = 64 : i64,
             c = 4096 : i64, ldc = 64 : i64, acc = false, tb = true, tc = false}
    ```
  }];
  let arguments = (ins I64Attr:$unit, I64Attr:$a, I64Attr:$lda, I64Attr:$b, I64Attr:$ldb, I64Attr:$c,
                       I64Attr:$ldc, BoolAttr:$acc, BoolAttr:$tb, BoolAttr:$tc);
  let assemblyFormat = "attr-dict";
}

def Npu_VecOp : Npu_Op<"vec", [HasParent<"ProgramOp">]> {
  let summary = "vector-unit op on n elements at TCM addresses";
  let description = [{
    `op` is a vector op name of the target ("add", "unpack_q4", ...; src/npu/target_model.h).

    Example:
    ```mlir
    npu.vec {op = "unpack_q4", dst = 8192 : i64, a = 4096 : i64, b = 0 : i64, c = 0 : i64,
             n = 1024 : i64, imm0 = 0.0 : f32, imm1 = 0.0 : f32}
    ```
  }];
  let arguments = (ins StrAttr:$op, I64Attr:$dst, I64Attr:$a, I64Attr:$b, I64Attr:$c, I64Attr:$n,
                       F32Attr:$imm0, F32Attr:$imm1);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Npu_WaitOp : Npu_Op<"wait", [HasParent<"ProgramOp">]> {
  let summary = "stall issue until every completion issued into `event` so far has happened";
  let description = [{
    The issue side of an event: the scalar core stops issuing until every completion issued into
    `event` up to this point has happened (DMA transfers done, or the units named by an earlier
    npu.signal drained). Later completions into the same event are not waited for, which is what lets
    a double-buffered schedule reuse two events per buffer pair.

    Example:
    ```mlir
    npu.wait {event = 2 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$event);
  let assemblyFormat = "attr-dict";
}

def Npu_SignalOp : Npu_Op<"signal", [HasParent<"ProgramOp">]> {
  let summary = "complete `event` once the units in mask `units` (1 dma, 2 matrix, 4 vector) drain";
  let description = [{
    Queues a completion into `event` behind the work already given to the units in the mask
    `units` (1 DMA, 2 matrix, 4 vector; the verifier refuses an empty or unknown mask): the event
    completes when all of them have drained what they had at issue time. The scalar core does not
    stall; an npu.wait on the event does. The cost model charges the target's signal latency.

    Example:
    ```mlir
    npu.signal {event = 4 : i64, units = 2 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$event, I64Attr:$units);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Npu_BarrierOp : Npu_Op<"barrier", [HasParent<"ProgramOp">]> {
  let summary = "stall issue until every unit is idle";
  let description = [{
    Stops issue until the DMA channels, the matrix arrays and the vector unit are all idle. Coarser
    than npu.signal + npu.wait (it drains every unit, not just the producer of a buffer); the
    schedules tdma-to-npu emits use events, and a barrier is for hand-written programs and tests.

    Example:
    ```mlir
    npu.barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Npu_LaunchOp : Npu_Op<"launch", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run an npu.program with DDR tensors bound to its buffers in order";
  let description = [{
    The operands bind the program's buffers in declaration order; the results are its last
    buffers (fresh writable outputs). A program of N buffers takes N - R operands for R results
    (a fused cluster has one output per projection) or N operands and one result (the last buffer
    is updated in place, as a KV append updates its cache; the result is its new value and has
    the last operand's type).

    Example:
    ```mlir
    %y = npu.launch @mm(%x, %pack) : (tensor<1x128xf16>, tensor<18432xi8>) -> tensor<1x256xf16>
    %c2 = npu.launch @kv(%k, %c) : (tensor<64x128xf16>, tensor<512x128xf16>) -> tensor<512x128xf16>
    %q, %k = npu.launch @nl(%x, %g, %pq, %pk) : (tensor<64x256xf16>, tensor<256xf16>, tensor<131072xi8>,
        tensor<65536xi8>) -> (tensor<64x256xf16>, tensor<64x128xf16>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$program, Variadic<AnyRankedTensor>:$args);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$program `(` $args `)` attr-dict `:` functional-type($args, $results)";
}

#endif  // TANDEM_NPU_OPS_TD
