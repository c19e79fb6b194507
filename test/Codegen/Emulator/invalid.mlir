// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-emu-lower-kernels=chip=gfx942

// Operations the emulation does not model are errors, never silently dropped.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: memref<64xf32, #gpu.address_space<global>>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %arg0[%c0] : memref<64xf32, #gpu.address_space<global>>
      %w = arith.constant 64 : i32
      %o = arith.constant 1 : i32
      // expected-error @below {{'gpu.shuffle' is not supported by the gfx emulation}}
      %y, %valid = gpu.shuffle xor %x, %o, %w : f32
      memref.store %y, %arg0[%c0] : memref<64xf32, #gpu.address_space<global>>
      gpu.return
    }
  }
}

// -----

// A matrix instruction the target does not have.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: memref<16xf16, #gpu.address_space<global>>, %out: memref<8xf32, #gpu.address_space<global>>) kernel {
      %c0 = arith.constant 0 : index
      %a = vector.load %arg0[%c0] : memref<16xf16, #gpu.address_space<global>>, vector<16xf16>
      %c = arith.constant dense<0.0> : vector<8xf32>
      // expected-error @below {{no gfx942 matrix instruction is emulated for 16x16x16 with 'vector<16xf16>' operands and 'vector<8xf32>' accumulators}}
      %d = amdgpu.wmma 16x16x16 %a * %a + %c : vector<16xf16>, vector<16xf16>, vector<8xf32>
      vector.store %d, %out[%c0] : memref<8xf32, #gpu.address_space<global>>, vector<8xf32>
      gpu.return
    }
  }
}

// -----

// A buffer load with an SGPR offset (the GEMM builder makes none).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: memref<64xf32, #gpu.address_space<global>>, %i: i32) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{only buffer loads from a static contiguous memref without offsets are emulated}}
      %x = amdgpu.raw_buffer_load %arg0[%i] sgprOffset %i : memref<64xf32, #gpu.address_space<global>>, i32 -> f32
      memref.store %x, %arg0[%c0] : memref<64xf32, #gpu.address_space<global>>
      gpu.return
    }
  }
}
