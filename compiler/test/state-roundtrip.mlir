// RUN: tandem-opt %s | tandem-opt | FileCheck %s

// CHECK-LABEL: func.func @state
// CHECK: state.kv_pages %{{.*}} {heads = 8 : i64, layout = "head_major", page_tokens = 128 : i64, pages = 8 : i64, width = 512 : i64} : tensor<1024x512xf16>
// CHECK: state.kv_write %{{.*}}, %{{.*}} at %{{.*}} {phase = "decode"} : tensor<1024x512xf16>, tensor<1x512xf16>
// CHECK: state.position_map %{{.*}} {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x2xi32>
func.func @state(%kc: tensor<1024x512xf16>, %k: tensor<1x512xf16>, %at: index, %pos: tensor<8xi32>)
    -> (tensor<1024x512xf16>, tensor<8x2xi32>) {
  %c = state.kv_pages %kc {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, heads = 8 : i64, layout = "head_major"} : tensor<1024x512xf16>
  %c2 = state.kv_write %c, %k at %at {phase = "decode"} : tensor<1024x512xf16>, tensor<1x512xf16>
  %m = state.position_map %pos {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x2xi32>
  return %c2, %m : tensor<1024x512xf16>, tensor<8x2xi32>
}
