//===- Empty.cpp - No code: a fuzz target's body is an object library -----===//
//
// CMake wants a source file for every executable; the fuzz targets get their
// code from the body object libraries and libFuzzer's main.
//
//===----------------------------------------------------------------------===//
