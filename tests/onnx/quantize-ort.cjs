// quantize-ort.cjs — runs a QDQ model written by `weir quantize --onnx` in
// ONNX Runtime (onnxruntime-node) and compares its output with Weir's, for
// tests/onnx/test-quantize-ort.sh.
//
//   node quantize-ort.cjs PKG MODEL.onnx INPUT.npy WEIR_OUTPUT.npy
//
// Prints "skip ..." when the package cannot be loaded, else
// "max_abs_diff D" (D with full precision).
'use strict';
const fs = require('fs');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${path}: float32 expected`);
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const bytes = buf.subarray(start);
  return { shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) };
}

async function main() {
  const [pkg, model, inputPath, weirPath] = process.argv.slice(2);
  let ort;
  try {
    ort = require(pkg);
  } catch (e) {
    console.log(`skip cannot load onnxruntime-node from ${pkg}: ${e.message}`);
    return;
  }
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: 1, logSeverityLevel: 3,
  });
  const x = readNpy(inputPath);
  const feeds = {};
  feeds[session.inputNames[0]] = new ort.Tensor('float32', x.data, x.shape);
  const out = (await session.run(feeds))[session.outputNames[0]].data;
  const want = readNpy(weirPath).data;
  if (out.length !== want.length) throw new Error(`ORT gave ${out.length} values, Weir ${want.length}`);
  let worst = 0;
  for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i] - want[i]));
  console.log(`max_abs_diff ${worst}`);
}

main().catch((e) => { console.log(`fail ${e.message}`); process.exit(1); });
