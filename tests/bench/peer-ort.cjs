// peer-ort.cjs — ONNX Runtime (onnxruntime-node) inference time of one
// model, for tests/bench/bench-models.c.
//
//   node peer-ort.cjs [--threads N] [--reps N] [--warmup N] PKG MODEL.onnx INPUT.npy EXPECTED.npy
//
// PKG is the installed onnxruntime-node package directory
// (tests/bench/install-ort.sh).  The session runs on the CPU with
// intraOpNumThreads N, interOpNumThreads 1, sequential execution and all
// graph optimizations.  The last line printed is
//   ok MEDIAN_MS MAX_ABS_ERR PASS|FAIL min_ms=MIN_MS
// (the output compared with EXPECTED at rtol 1e-4, atol 1e-5).
'use strict';
const fs = require('fs');

const RTOL = 1e-4, ATOL = 1e-5;

// A little-endian float32 .npy file (C order): {shape, data}.
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header))
    throw new Error(`${path}: float32 C-order data expected (${header.trim()})`);
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const bytes = buf.subarray(start);
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return { shape, data };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = { threads: 1, reps: 20, warmup: 3 };
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    const m = args[i].match(/^--(threads|reps|warmup)$/);
    if (m) opt[m[1]] = Number(args[++i]);
    else pos.push(args[i]);
  }
  if (pos.length !== 4) {
    console.log('fail usage: peer-ort.cjs [--threads N] [--reps N] [--warmup N] PKG MODEL.onnx INPUT.npy EXPECTED.npy');
    process.exit(2);
  }
  const [pkg, model, inputPath, expectedPath] = pos;
  let ort;
  try {
    ort = require(pkg);
  } catch (e) {
    console.log(`skip cannot load onnxruntime-node from ${pkg}: ${e.message}`);
    return;
  }
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: opt.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(inputPath);
  const want = readNpy(expectedPath);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  let out;
  for (let i = 0; i < Math.max(opt.warmup, 1); i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < opt.reps; i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const n = times.length;
  const med = n % 2 ? times[(n - 1) / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  const got = out[session.outputNames[0]].data;
  let err = 0, ok = got.length === want.data.length;
  for (let i = 0; ok && i < got.length; i++) {
    const d = Math.abs(got[i] - want.data[i]);
    err = Math.max(err, d);
    if (!(d <= ATOL + RTOL * Math.abs(want.data[i]))) ok = false;
  }
  console.log(`onnxruntime-node ${require(pkg + '/package.json').version}, ${opt.threads} intra-op threads`);
  console.log(`ok ${med.toFixed(6)} ${err.toPrecision(3)} ${ok ? 'PASS' : 'FAIL'} min_ms=${times[0].toFixed(6)}`);
}

main().catch((e) => {
  console.log(`fail ${String(e.message).split('\n')[0]}`);
  process.exit(1);
});
