// RUN: kiln-opt %s --verify-diagnostics --kiln-emu-lower-kernels=chip=gfx9999

// expected-error @below {{unknown gfx target 'gfx9999'}}
module {
}
