#!/usr/bin/env node
// ONNX Runtime's side of bench/onnxruntime.sh (never a dependency of the
// build or the tests): loads MODEL.onnx with onnxruntime-node on the CPU
// execution provider (intraOpNumThreads T, interOpNumThreads 1, sequential
// execution, graph optimizations ALL) and
//   --write-inputs DIR  writes seeded random inputs to DIR/NAME.bin (raw
//                       float32), the files `taso-run --inputs DIR` reads;
//   --inputs DIR        reads them instead (default: the seeded inputs);
//   --save DIR          runs once and writes output NAME to DIR/NAME.bin,
//                       for `taso-run --expect DIR`;
//   --serve             times runs on request: after --warmup untimed runs
//                       it prints "ready", then for each line "N" on stdin
//                       runs N times and prints "times MS MS ..." (one
//                       line); "quit" or end of input ends it. The caller
//                       alternates these rounds with taso-run's.
// Prints "ort: onnxruntime-node VERSION, T intra-op threads, ..." first.
// Usage: node bench/ort_latency.js MODEL.onnx [--threads T] [--wait spin|passive]
//          [--seed S] [--write-inputs DIR | --inputs DIR] [--save DIR]
//          [--serve [--warmup W]]
// NODE_PATH must hold onnxruntime-node (bench/onnxruntime.sh sets it).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

function usage(msg) {
  process.stderr.write(`ort_latency.js: ${msg}\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const opt = { threads: 1, wait: 'spin', seed: 1, warmup: 3 };
let model = null;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => {
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    return argv[++i];
  };
  if (a === '--threads') opt.threads = parseInt(val(), 10);
  else if (a === '--wait') opt.wait = val();
  else if (a === '--seed') opt.seed = parseInt(val(), 10);
  else if (a === '--write-inputs') opt.writeInputs = val();
  else if (a === '--inputs') opt.inputs = val();
  else if (a === '--save') opt.save = val();
  else if (a === '--serve') opt.serve = true;
  else if (a === '--warmup') opt.warmup = parseInt(val(), 10);
  else if (a.startsWith('--')) usage(`unknown option ${a}`);
  else if (model === null) model = a;
  else usage(`unexpected argument ${a}`);
}
if (!model) usage('no model given');
if (!(opt.threads >= 1)) usage('--threads must be a positive integer');
if (opt.wait !== 'spin' && opt.wait !== 'passive') usage('--wait is spin or passive');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  usage(`cannot load onnxruntime-node (${e.message}); run bench/onnxruntime.sh, which installs it`);
}

// xorshift32, uniform in [-1, 1): the same inputs for the same seed
function filler(seed) {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return (s / 4294967296) * 2 - 1;
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

function tensorFile(dir, name) {
  if (name.includes('/') || name === '.' || name === '..') throw new Error(`tensor name '${name}' is no file name`);
  return path.join(dir, `${name}.bin`);
}

async function main() {
  const version = require('onnxruntime-node/package.json').version;
  const spin = opt.wait === 'spin' ? '1' : '0';
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: opt.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // ORT's own threads spin between operators by default, as libgomp's do;
    // --wait passive turns it off on both sides (OMP_WAIT_POLICY=passive)
    extra: { session: { intra_op: { allow_spinning: spin }, inter_op: { allow_spinning: spin } } },
  };
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, options);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(`ort: onnxruntime-node ${version}, ${opt.threads} intra-op threads, 1 inter-op, ` +
              `sequential, graph optimization all, spinning ${spin === '1' ? 'on' : 'off'}; ` +
              `session created in ${loadMs.toFixed(0)} ms`);

  const meta = session.inputMetadata;
  const feeds = {};
  const rand = filler(opt.seed);
  for (let k = 0; k < session.inputNames.length; k++) {
    const name = session.inputNames[k];
    const m = meta && meta[k];
    if (!m || !m.isTensor) throw new Error(`input '${name}': no tensor metadata`);
    if (m.type !== 'float32') throw new Error(`input '${name}' is ${m.type}, not float32`);
    if (!m.shape.every((d) => typeof d === 'number' && d > 0))
      throw new Error(`input '${name}' has a symbolic shape [${m.shape}]`);
    const n = m.shape.reduce((a, b) => a * b, 1);
    let data;
    if (opt.inputs) {
      const buf = fs.readFileSync(tensorFile(opt.inputs, name));
      if (buf.length !== 4 * n) throw new Error(`${tensorFile(opt.inputs, name)}: ${buf.length} bytes, expected ${4 * n}`);
      data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    } else {
      data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = rand();
    }
    if (opt.writeInputs) {
      fs.mkdirSync(opt.writeInputs, { recursive: true });
      fs.writeFileSync(tensorFile(opt.writeInputs, name), Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    }
    feeds[name] = new ort.Tensor('float32', data, m.shape);
  }

  if (opt.save) {
    const out = await session.run(feeds);
    fs.mkdirSync(opt.save, { recursive: true });
    for (const name of session.outputNames) {
      const t = out[name];
      if (t.type !== 'float32') throw new Error(`output '${name}' is ${t.type}, not float32`);
      fs.writeFileSync(tensorFile(opt.save, name), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    }
    console.log(`saved ${session.outputNames.length} output(s) to ${opt.save}`);
  }

  if (opt.serve) {
    for (let i = 0; i < opt.warmup; i++) await session.run(feeds);
    console.log('ready');
    const rl = readline.createInterface({ input: process.stdin, terminal: false });
    for await (const line of rl) {
      const cmd = line.trim();
      if (cmd === 'quit') break;
      const n = parseInt(cmd, 10);
      if (!(n >= 1)) {
        console.log(`error: expected a number of runs, got '${cmd}'`);
        continue;
      }
      const times = [];
      for (let i = 0; i < n; i++) {
        const s = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
      console.log(`times ${times.map((t) => t.toFixed(3)).join(' ')} median ${median(times).toFixed(3)}`);
    }
    rl.close();
  }
  await session.release();
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`ort_latency.js: ${model}: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
