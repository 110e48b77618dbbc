// ort-profile.cjs — ONNX Runtime's own per-node profile of one model, for
// tests/bench/mobile-layers.py.
//
//   node ort-profile.cjs PKG MODEL.onnx INPUT.npy THREADS RUNS PREFIX
//
// PKG is the installed onnxruntime-node package directory
// (tests/bench/install-ort.sh).  The session is the one peer-ort.cjs
// times (CPU, intraOpNumThreads THREADS, interOpNumThreads 1, sequential,
// all graph optimizations) with enableProfiling; it runs RUNS times and
// the last line printed is the path of the JSON trace ONNX Runtime wrote
// (its name starts with PREFIX), whose "Node" events carry each kernel's
// duration in microseconds.
'use strict';
const fs = require('fs');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${path}: float32 data expected`);
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const bytes = buf.subarray(start);
  return { shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) };
}

async function main() {
  const [pkg, model, input, threads, runs, prefix] = process.argv.slice(2);
  if (!prefix) {
    console.log('usage: ort-profile.cjs PKG MODEL.onnx INPUT.npy THREADS RUNS PREFIX');
    process.exit(2);
  }
  const ort = require(pkg);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: prefix,
  });
  const x = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  for (let i = 0; i < Number(runs); i++) await session.run(feeds);
  await session.endProfiling();
  const dir = require('path').dirname(prefix);
  const base = require('path').basename(prefix);
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json')).sort();
  console.log(require('path').join(dir, files[files.length - 1]));
}

main().catch((e) => {
  console.log(`fail ${String(e.message).split('\n')[0]}`);
  process.exit(1);
});
