// RUN: kiln-opt %s -verify-diagnostics --kiln-materialize-executables='targets=tpu'

// expected-error @below {{target 'tpu' is neither cpu, a gfx target (gfx942) nor an emulated one (emu:gfx942)}}
module {
  func.func @dispatch_0() attributes {kiln.dispatch} { return }
}
