'use strict';
// Minimal .npy (NumPy array file, format versions 1.0-3.0) reader and writer.
//
// Little-endian (or byte-order-free) C-order arrays of these dtypes:
//   <f4 float32, <f8 float64, <f2 float16, <i8 int64, <i4 int32, <i2 int16,
//   |i1 int8, <u8 uint64, <u4 uint32, <u2 uint16, |u1 uint8, |b1 bool
// Arrays come back as { dtype, shape, data } with `dtype` an ONNX Runtime
// tensor type name ('float32', 'int64', 'bool', ...) and `data` the typed
// array ORT expects for it (float16 -> Uint16Array of raw bits, bool ->
// Uint8Array of 0/1).

const fs = require('fs');

// ORT type name -> [numpy descr, bytes per element, typed array constructor]
const DTYPES = {
  float32: ['<f4', 4, Float32Array],
  float64: ['<f8', 8, Float64Array],
  float16: ['<f2', 2, Uint16Array],
  int64: ['<i8', 8, BigInt64Array],
  int32: ['<i4', 4, Int32Array],
  int16: ['<i2', 2, Int16Array],
  int8: ['|i1', 1, Int8Array],
  uint64: ['<u8', 8, BigUint64Array],
  uint32: ['<u4', 4, Uint32Array],
  uint16: ['<u2', 2, Uint16Array],
  uint8: ['|u1', 1, Uint8Array],
  bool: ['|b1', 1, Uint8Array],
};

// numpy descr (with any byte-order mark) -> ORT type name
const DESCR_TO_TYPE = {};
for (const [type, [descr]] of Object.entries(DTYPES)) {
  const code = descr.slice(1);
  for (const order of ['<', '|', '=']) DESCR_TO_TYPE[order + code] = type;
}

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

function parseHeader(text, file) {
  // The header is a Python dict literal, e.g.
  // {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) {
    throw new Error(`${file}: unreadable .npy header: ${text.trim()}`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0)
    .map((s) => {
      const n = Number(s.replace(/L$/, ''));
      if (!Number.isInteger(n) || n < 0) throw new Error(`${file}: bad shape (${shape[1]})`);
      return n;
    });
  return { descr: descr[1], fortranOrder: fortran[1] === 'True', shape: dims };
}

function numElements(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  let headerLen;
  let offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw new Error(`${file}: unsupported .npy version ${major}.${buf[7]}`);
  }
  const header = buf.subarray(offset, offset + headerLen).toString(major === 3 ? 'utf8' : 'latin1');
  const { descr, fortranOrder, shape } = parseHeader(header, file);
  const type = DESCR_TO_TYPE[descr];
  if (!type) throw new Error(`${file}: unsupported dtype '${descr}' (big-endian or exotic)`);
  if (fortranOrder && shape.length > 1) {
    throw new Error(`${file}: Fortran-order arrays are not supported (save with np.ascontiguousarray)`);
  }
  const [, size, Ctor] = DTYPES[type];
  const count = numElements(shape);
  const start = offset + headerLen;
  if (buf.length - start < count * size) {
    throw new Error(`${file}: truncated data (${buf.length - start} bytes, need ${count * size})`);
  }
  // Copy into a fresh, aligned buffer owned by the typed array.
  const data = new Ctor(count);
  Buffer.from(data.buffer, data.byteOffset, count * size).set(buf.subarray(start, start + count * size));
  return { dtype: type, shape, data };
}

function writeNpy(file, dtype, shape, data) {
  const spec = DTYPES[dtype];
  if (!spec) throw new Error(`cannot write dtype '${dtype}' to .npy`);
  const [descr, size] = spec;
  const count = numElements(shape);
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length !== count * size) {
    throw new Error(`${file}: ${bytes.length} data bytes for shape [${shape}] of ${dtype}`);
  }
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // Pad with spaces so that magic + version + length + header + '\n' is a
  // multiple of 64 bytes (what numpy writes).
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), bytes]));
}

module.exports = { readNpy, writeNpy, DTYPES, numElements };
