// RUN: fuser-opt %s | fuser-opt | filecheck %s

// The host side of a TMA load: upstream's nvgpu.tma.create.descriptor on the buffer cast to an
// unranked memref, the box as index operands equal to the descriptor's tensor shape.

// CHECK-LABEL: func.func @host
// CHECK:       %[[U:.*]] = memref.cast %{{.*}} : memref<4096x4096xbf16> to memref<*xbf16>
// CHECK-NEXT:  %{{.*}} = nvgpu.tma.create.descriptor %[[U]] box[%{{.*}}, %{{.*}}] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3 : i64>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
func.func @host(%a: memref<4096x4096xbf16>) {
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %u = memref.cast %a : memref<4096x4096xbf16> to memref<*xbf16>
  %d = nvgpu.tma.create.descriptor %u box[%c128, %c64] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
  func.return
}

// The generic form of memref.cast reads the same, and prints in upstream's custom form.
// CHECK-LABEL: func.func @generic_cast
// CHECK-NEXT:  %{{.*}} = memref.cast %{{.*}} : memref<8xf32> to memref<*xf32>
func.func @generic_cast(%a: memref<8xf32>) {
  %u = "memref.cast"(%a) : (memref<8xf32>) -> memref<*xf32>
  func.return
}
