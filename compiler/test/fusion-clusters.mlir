// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters | FileCheck %s --check-prefix=ALL
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="partitioner=library" | FileCheck %s --check-prefix=LIB
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="power-cap=0.9" | FileCheck %s --check-prefix=POWER
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="power-cap=0.9 partitioner=naive" | FileCheck %s --check-prefix=POWERNAIVE
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="tcm-budget=150000" | FileCheck %s --check-prefix=TCM
// RUN: tandem-opt %inputs/layer.mlir --llm-expand-mlp --llm-specialize-phase --llm-fusion-clusters="tcm-budget=150000 partitioner=naive" | FileCheck %s --check-prefix=TCMNAIVE
// RUN: not tandem-opt %inputs/layer.mlir --llm-fusion-clusters="partitioner=random" 2>&1 | FileCheck %s --check-prefix=BAD

// The whole layer fits the v75's 8 MiB and draws ~1.05 W: one cluster; nothing but weights, the
// layer input, the KV cache reads and the results crosses DDR (1.10 MB against 2.48 MB when every
// op is its own kernel).
// ALL: func.func @layer{{.*}}attributes {fusion.clusters = 1 : i64, fusion.external_bytes = 1099008 : i64, fusion.peak_power_w = 1.05{{[0-9]*}} : f64, fusion.seconds = {{.*}}, fusion.strategy = "search"}
// LIB: fusion.clusters = 17 : i64, fusion.external_bytes = 2475520 : i64

// Under a 0.9 W cap the search cuts once, right after the attention; the greedy reference cuts
// later, where its growing cluster first crosses the cap, and moves more bytes.
// POWER: fusion.clusters = 2 : i64, fusion.external_bytes = 1164544 : i64, fusion.peak_power_w = 0.87
// POWER: llm.attention {{.*}}cluster = 0 : i64
// POWER-NEXT: llm.linear {{.*}}cluster = 1 : i64
// POWERNAIVE: fusion.clusters = 2 : i64, fusion.external_bytes = 1230080 : i64

// With 150 KB of TCM the intermediates no longer all fit: four clusters, fewer bytes than the
// greedy reference's four.
// TCM: fusion.clusters = 4 : i64, fusion.external_bytes = 1819904 : i64
// TCMNAIVE: fusion.clusters = 4 : i64, fusion.external_bytes = 1885696 : i64

// BAD: partitioner must be search, naive, library, local or mega, got 'random'
