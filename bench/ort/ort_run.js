#!/usr/bin/env node
'use strict';
// Runs an ONNX model with ONNX Runtime's CPU execution provider: the reference
// for Kiln's end-to-end tests and benchmarks.
//
//   node ort_run.js model.onnx --input NAME=in.npy ... --output-dir DIR [--threads N]
//       Runs once and writes every output to DIR/<NAME>.npy; NAME is the
//       output name with any character outside [A-Za-z0-9._-] replaced by
//       '_' (as kiln-run does).
//
//   node ort_run.js model.onnx --bench [--threads N] [--warmup W] [--iterations I]
//                   [--input NAME=in.npy ...] [--json]
//       Times session.run: inputs not given are random (floats uniform in
//       [-1, 1), integers in [0, 10), bools 0/1; seeded). Prints latency
//       median/p90/p99 in ms and throughput; --json prints one JSON line.
//
//   --profile PREFIX also writes ONNX Runtime's per-node trace to
//   PREFIX_<date>.json (bench/ort/profile_ops.py sums it by op type).
//
// Session: CPU EP, intra-op threads = N (default 1), inter-op threads = 1,
// sequential execution, graph optimization level 'all' (--optimization: a
// lower level keeps ONNX Runtime from fusing QDQ pairs into its int8
// kernels, whose uint8 x int8 products saturate in 16 bits on hosts without
// VNNI).
// Install ORT first: scripts/setup.sh (or `npm ci --ignore-scripts` here).

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy, DTYPES, numElements } = require('./npy');

const USAGE = `usage: node ort_run.js MODEL.onnx [--input NAME=FILE.npy ...]
         [--output-dir DIR] [--threads N] [--bench [--warmup W] [--iterations I] [--json]]
         [--seed S] [--optimization disabled|basic|extended|all] [--quiet]
         [--profile PREFIX]`;

function fail(msg) {
  process.stderr.write(`ort_run: ${msg}\n`);
  process.exit(2);
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    fail(`cannot load onnxruntime-node (${e.message.split('\n')[0]}); ` +
      'run scripts/setup.sh or `npm ci --ignore-scripts` in bench/ort');
  }
  return null;
}

function parseArgs(argv) {
  const args = {
    model: null, inputs: [], outputDir: null, threads: 1, bench: false,
    warmup: 10, iterations: 100, json: false, seed: 1234, quiet: false,
  };
  const positiveInt = (name, v, min = 1) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) fail(`${name} wants an integer >= ${min}, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let value = null;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    const next = () => {
      if (value !== null) return value;
      if (i + 1 >= argv.length) fail(`${a} needs a value\n${USAGE}`);
      return argv[++i];
    };
    switch (a) {
      case '--input': {
        const v = next();
        const sep = v.indexOf('=');
        if (sep <= 0) fail(`--input wants NAME=FILE.npy, got '${v}'`);
        args.inputs.push([v.slice(0, sep), v.slice(sep + 1).replace(/^@/, '')]);
        break;
      }
      case '--output-dir': args.outputDir = next(); break;
      case '--threads': args.threads = positiveInt(a, next()); break;
      case '--warmup': args.warmup = positiveInt(a, next(), 0); break;
      case '--iterations': args.iterations = positiveInt(a, next()); break;
      case '--seed': args.seed = positiveInt(a, next(), 0); break;
      case '--optimization': {
        args.optimization = next();
        if (!['disabled', 'basic', 'extended', 'all'].includes(args.optimization))
          fail(`--optimization wants disabled, basic, extended or all, got '${args.optimization}'`);
        break;
      }
      case '--bench': args.bench = true; break;
      case '--profile': args.profile = next(); break;
      case '--json': args.json = true; break;
      case '--quiet': args.quiet = true; break;
      case '-h': case '--help': process.stdout.write(USAGE + '\n'); process.exit(0); break;
      default:
        if (a.startsWith('-')) fail(`unknown option ${a}\n${USAGE}`);
        if (args.model) fail(`more than one model given\n${USAGE}`);
        args.model = a;
    }
  }
  if (!args.model) fail(USAGE);
  if (!args.bench && !args.outputDir) fail(`give --output-dir or --bench\n${USAGE}`);
  return args;
}

function sanitize(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

// xorshift32: deterministic random inputs for benchmarks.
function rng(seed) {
  let s = (seed >>> 0) || 0x9e3779b9;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

function randomData(type, count, next) {
  const spec = DTYPES[type];
  if (!spec) fail(`cannot make random data of type ${type}; give it with --input`);
  const data = new spec[2](count);
  for (let i = 0; i < count; i++) {
    if (type === 'float32' || type === 'float64') data[i] = next() * 2 - 1;
    else if (type === 'float16') data[i] = 0; // +0.0 bits; rarely needed
    else if (type === 'bool') data[i] = next() < 0.5 ? 1 : 0;
    else if (type === 'int64' || type === 'uint64') data[i] = BigInt(Math.floor(next() * 10));
    else data[i] = Math.floor(next() * 10);
  }
  return data;
}

function percentile(sorted, q) {
  // Linear interpolation between closest ranks (numpy's default).
  if (sorted.length === 1) return sorted[0];
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function describeShape(shape) {
  return shape.length ? shape.join('x') : 'scalar';
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const log = (s) => { if (!args.quiet && !args.json) process.stdout.write(s + '\n'); };
  if (!fs.existsSync(args.model)) fail(`no such model: ${args.model}`);

  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: args.optimization || 'all',
    logSeverityLevel: 3,
  };
  // --profile PREFIX: ONNX Runtime's own per-node trace (Chrome trace JSON,
  // PREFIX_<date>.json), written when the session ends; its node events
  // give each kernel's duration (bench/ort/profile_ops.py sums them by op).
  if (args.profile) {
    options.enableProfiling = true;
    options.profileFilePrefix = args.profile;
  }
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, options);
  const createMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const meta = new Map((session.inputMetadata || []).map((m) => [m.name, m]));
  const feeds = {};
  for (const [name, file] of args.inputs) {
    if (!session.inputNames.includes(name)) {
      fail(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    }
    const arr = readNpy(file);
    const m = meta.get(name);
    if (m && m.isTensor && m.type && m.type !== arr.dtype) {
      fail(`input '${name}': ${file} holds ${arr.dtype}, the model wants ${m.type}`);
    }
    feeds[name] = new ort.Tensor(arr.dtype, arr.data, arr.shape);
  }
  const missing = session.inputNames.filter((n) => !(n in feeds));
  if (missing.length) {
    if (!args.bench) fail(`missing inputs: ${missing.join(', ')}`);
    const next = rng(args.seed);
    for (const name of missing) {
      const m = meta.get(name);
      if (!m || !m.isTensor || !m.shape.every((d) => typeof d === 'number' && d >= 0)) {
        fail(`input '${name}' has no static shape; give it with --input`);
      }
      feeds[name] = new ort.Tensor(m.type, randomData(m.type, numElements(m.shape), next), m.shape);
    }
    log(`random inputs: ${missing.join(', ')}`);
  }

  if (args.outputDir) {
    fs.mkdirSync(args.outputDir, { recursive: true });
    const t1 = process.hrtime.bigint();
    const results = await session.run(feeds);
    const runMs = Number(process.hrtime.bigint() - t1) / 1e6;
    const written = new Map();
    for (const name of session.outputNames) {
      const t = results[name];
      const file = sanitize(name) + '.npy';
      if (written.has(file)) fail(`outputs '${written.get(file)}' and '${name}' both map to ${file}`);
      written.set(file, name);
      writeNpy(path.join(args.outputDir, file), t.type, t.dims, t.data);
      log(`${name}: ${t.type} ${describeShape(t.dims)} -> ${path.join(args.outputDir, file)}`);
    }
    log(`ran in ${runMs.toFixed(2)} ms (session created in ${createMs.toFixed(0)} ms)`);
  }

  if (args.bench) {
    for (let i = 0; i < args.warmup; i++) await session.run(feeds);
    const times = new Array(args.iterations);
    const tStart = process.hrtime.bigint();
    for (let i = 0; i < args.iterations; i++) {
      const s = process.hrtime.bigint();
      await session.run(feeds);
      times[i] = Number(process.hrtime.bigint() - s) / 1e6;
    }
    const totalS = Number(process.hrtime.bigint() - tStart) / 1e9;
    const sorted = [...times].sort((a, b) => a - b);
    const round = (x) => Math.round(x * 1000) / 1000;
    const result = {
      runtime: 'onnxruntime',
      version: ort.env.versions ? ort.env.versions.node : undefined,
      model: path.basename(args.model),
      device: 'cpu',
      threads: args.threads,
      warmup: args.warmup,
      iterations: args.iterations,
      median_ms: round(percentile(sorted, 0.5)),
      p90_ms: round(percentile(sorted, 0.9)),
      p99_ms: round(percentile(sorted, 0.99)),
      mean_ms: round(times.reduce((a, b) => a + b, 0) / times.length),
      min_ms: round(sorted[0]),
      max_ms: round(sorted[sorted.length - 1]),
      throughput_per_s: round(args.iterations / totalS),
      session_create_ms: round(createMs),
    };
    if (args.json) {
      process.stdout.write(JSON.stringify(result) + '\n');
    } else {
      log(`${result.model}: ORT ${result.version} CPU, ${args.threads} thread(s), ` +
        `${args.warmup} warm-up + ${args.iterations} timed runs`);
      log(`latency ms: median ${result.median_ms}  p90 ${result.p90_ms}  p99 ${result.p99_ms}  ` +
        `(min ${result.min_ms}, mean ${result.mean_ms}, max ${result.max_ms})`);
      log(`throughput: ${result.throughput_per_s} inferences/s`);
    }
  }
  if (args.profile && session.endProfiling) session.endProfiling();
  if (session.release) await session.release();
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
