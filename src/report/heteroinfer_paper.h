// HeteroInfer's published numbers (Snapdragon 8 Gen 3, W4A16, batch 1), as ../docs/SEEDS.md
// section A lists them. [paper] = stated in the paper; [derived] = arithmetic on paper figures
// (the formula is in the comment). These are what tandem's predictions are compared with, never
// inputs to the models (the SoC descriptions take only the characterization data).
#pragma once

namespace tandem::report::paper {

// Prefill, seq 256 [paper]: Llama-8B 247.9 tok/s, InternLM-1.8B 1092 tok/s (Hetero-tensor).
inline constexpr double kPrefill256Llama8bTensor = 247.9;
inline constexpr double kPrefill256Internlm18bTensor = 1092.0;
// Hetero-tensor over Hetero-layer [paper]: +30.2% on average, +40.8% at seq 32.
inline constexpr double kTensorOverLayerAvg = 1.302;
inline constexpr double kTensorOverLayerAt32 = 1.408;
// Hetero-layer vs MNN-OpenCL (the GPU-only baseline) [paper]: 5.85x.
inline constexpr double kLayerOverGpu = 5.85;
// [derived] Hetero-layer at 256 = 247.9 / 1.302 (the average gain applied at 256);
// GPU-only at 256 = that / 5.85.
inline constexpr double kPrefill256Llama8bLayerDerived = kPrefill256Llama8bTensor / kTensorOverLayerAvg;
inline constexpr double kPrefill256Llama8bGpuDerived = kPrefill256Llama8bLayerDerived / kLayerOverGpu;

// Decode (prompt 256) [paper]: tok/s of Hetero-tensor.
inline constexpr double kDecodeLlama8b = 14.01, kDecodeLlama3b = 29.9, kDecodeInternlm18b = 51.12;
// Decode DRAM bandwidth [paper]: GPU alone 43.3 GB/s, GPU+NPU 59.5 GB/s.
inline constexpr double kDecodeGbsGpu = 43.3, kDecodeGbsHetero = 59.5;

// Dynamic length, Llama-8B seq 525 [paper]: Hetero-tensor speedup over each baseline.
inline constexpr double kDyn525OverOnlinePrepare = 2.24, kDyn525OverPadding = 2.21, kDyn525OverNpuPipe = 1.35;
// Online-prepare's graph build [paper] (an input of the NPU target's prepare model, shown for reference).
inline constexpr double kPrepareMsAt135 = 408.4, kPrepareMsAt1000 = 2050.0;

// Fast sync [paper]: prefill +15.8% (layer) / +24.3% (tensor); decode 4.01x on Llama-8B.
inline constexpr double kFastSyncPrefillLayer = 1.158, kFastSyncPrefillTensor = 1.243, kFastSyncDecodeLlama8b = 4.01;
inline constexpr double kFastSyncDecodeOthers = 2.2;  // "~2.2x on the others"

// Ablation, Llama-8B prefill seq 320 [paper]: naive NPU is 62.5% slower than the GPU (GPU / naive =
// 1.625); then cumulative step gains.
inline constexpr double kAblationGpuOverNaive = 1.625;
inline constexpr double kAblationActivationCentric = 2.05, kAblationOrderExchange = 1.79, kAblationWeightCentric = 1.20,
                        kAblationFastSync = 1.19;

// Energy, prompt 256 output 32 [paper]: Hetero-tensor end-to-end energy 55% below GPU-only and
// 12.8% below Hetero-layer; Hetero-layer prefill power 2.23 W.
inline constexpr double kEnergyTensorVsGpu = 1.0 - 0.55, kEnergyTensorVsLayer = 1.0 - 0.128, kLayerPrefillWatts = 2.23;

// With a game running [paper]: prefill slows 0.5% (Hetero-layer) and 2.2% (Hetero-tensor); GPU-only
// inference drops the game to 0 FPS.
inline constexpr double kGameSlowdownLayer = 0.005, kGameSlowdownTensor = 0.022, kGameFpsGpuOnly = 0.0;

// End-to-end workloads [paper]: mean prompt (prefill) and output (decode) tokens per request.
inline constexpr int kBellePrompt = 54, kBelleGen = 374, kGsm8kPrompt = 296, kGsm8kGen = 340, kTriviaQaPrompt = 1787,
                     kTriviaQaGen = 5;

// Snapdragon 8 Elite [paper]: prefill +10.5% over the 8 Gen 3, decode similar (same DRAM).
inline constexpr double kEliteOverGen3Prefill = 1.105;

}  // namespace tandem::report::paper
