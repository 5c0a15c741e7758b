// RUN: tandem-opt %s | tandem-opt | FileCheck %s

// CHECK-LABEL: func.func @state
// CHECK: state.kv_pages {layout = "head_major", page_tokens = 128 : i64, pages = 8 : i64, width = 512 : i64} : tensor<1024x512xf16>
// CHECK: state.position_map %{{.*}} {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x2xi32>
func.func @state(%pos: tensor<8xi32>) -> (tensor<1024x512xf16>, tensor<8x2xi32>) {
  %c = state.kv_pages {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, layout = "head_major"} : tensor<1024x512xf16>
  %m = state.position_map %pos {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x2xi32>
  return %c, %m : tensor<1024x512xf16>, tensor<8x2xi32>
}
