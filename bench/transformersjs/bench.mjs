// Peer benchmark: transformers.js (@huggingface/transformers 4.3.1, which runs
// onnxruntime-node 1.30.0) embedding and reranking the same texts with the same ONNX graphs
// as the Go benchmarks BenchmarkONNXEmbed{MiniLM,Tiny} and BenchmarkCrossEncoder{MiniLM,Tiny}.
//
// usage: node bench.mjs --dir BENCH_DIR [--models SHARED_MODELS] [--deps NODE_DEPS]
//                       [--threads 1] [--batch 32] [--runs 3] [--tasks embed,rerank,embed-tiny,rerank-tiny]
//   BENCH_DIR holds minilm-random-encoder/, minilm-random-cross-encoder/, texts-256-40.json
//   and the Go side's expect-embed.json / expect-rerank.json, all written by the Go
//   benchmarks (run.sh runs those first). SHARED_MODELS holds tiny-bert-encoder/ and
//   tiny-bert-cross-encoder/ (model.onnx at the folder root).
// Each task embeds (or scores against one query) all texts in chunks of --batch, once to
// warm up and then --runs times; it prints one JSON object per task on stdout, with the
// wall-clock rate, the process CPU time per item, and the largest difference from the Go
// outputs (a check that both sides ran the same graph on the same tokens).
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const args = {};
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i].startsWith('--')) args[process.argv[i].slice(2)] = process.argv[++i];
}
const dir = args.dir;
if (!dir) { console.error('--dir is required'); process.exit(2); }
const threads = Number(args.threads ?? 1);
const batch = Number(args.batch ?? 32);
const runs = Number(args.runs ?? 3);
const tasks = (args.tasks ?? 'embed,rerank').split(',');
const models = args.models ?? new URL('../../../shared/models', import.meta.url).pathname;

// The npm packages live in a git-ignored folder (default <repo>/.deps/node; see run.sh).
const deps = args.deps ?? new URL('../../.deps/node', import.meta.url).pathname;
const entry = join(deps, 'node_modules', '@huggingface', 'transformers', 'dist', 'transformers.node.mjs');
const { env, pipeline, AutoTokenizer, AutoModelForSequenceClassification } = await import(entry);
env.allowRemoteModels = false;
env.allowLocalModels = true;
const session_options = { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential' };
const { query, texts } = JSON.parse(readFileSync(join(dir, 'texts-256-40.json'), 'utf8'));

function chunks(a, n) { const out = []; for (let i = 0; i < a.length; i += n) out.push(a.slice(i, i + n)); return out; }

async function measure(fn) {
  const first = await fn(); // warm-up (and the outputs checked against Go)
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let r = 0; r < runs; r++) await fn();
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const items = texts.length * runs;
  return { first, secs, per_second: items / secs, cpu_ms_per_item: (cpu.user + cpu.system) / 1000 / items };
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (Array.isArray(a[i])) { for (let j = 0; j < a[i].length; j++) m = Math.max(m, Math.abs(a[i][j] - b[i][j])); }
    else m = Math.max(m, Math.abs(a[i] - b[i]));
  }
  return m;
}

function report(task, res, expectFile, key, n) {
  let parity = null;
  if (expectFile && existsSync(join(dir, expectFile))) {
    const want = JSON.parse(readFileSync(join(dir, expectFile), 'utf8'))[key];
    parity = maxAbsDiff(want, res.first.slice(0, n));
  }
  console.log(JSON.stringify({ task, peer: 'transformers.js 4.3.1 / onnxruntime-node 1.30.0', threads, batch,
    items: texts.length, runs, seconds: +res.secs.toFixed(3), per_second: +res.per_second.toFixed(2),
    cpu_ms_per_item: +res.cpu_ms_per_item.toFixed(3), max_abs_diff_vs_go: parity }));
}

async function embedTask(task, root, name, subfolder, expectFile) {
  env.localModelPath = root + '/';
  const extractor = await pipeline('feature-extraction', name, { dtype: 'fp32', device: 'cpu', subfolder, session_options });
  const embedAll = async () => {
    const out = [];
    for (const c of chunks(texts, batch)) out.push(...(await extractor(c, { pooling: 'mean', normalize: true })).tolist());
    return out;
  };
  report(task, await measure(embedAll), expectFile, 'vectors', 8);
}

async function rerankTask(task, root, name, subfolder, expectFile) {
  // The tokenizer always comes from the bench folder's copy of the ms-marco tokenizer
  // (tiny-bert-cross-encoder has the same tokenizer.json but no tokenizer_config.json,
  // which transformers.js requires).
  env.localModelPath = dir + '/';
  const tok = await AutoTokenizer.from_pretrained('minilm-random-cross-encoder');
  env.localModelPath = root + '/';
  const model = await AutoModelForSequenceClassification.from_pretrained(name, { dtype: 'fp32', device: 'cpu', subfolder, session_options });
  const scoreAll = async () => {
    const out = [];
    for (const c of chunks(texts, batch)) {
      const inputs = tok(new Array(c.length).fill(query), { text_pair: c, padding: true, truncation: true });
      const { logits } = await model(inputs);
      out.push(...Array.from(logits.data));
    }
    return out;
  };
  report(task, await measure(scoreAll), expectFile, 'logits', 16);
}

for (const task of tasks) {
  switch (task) {
    case 'embed': await embedTask(task, dir, 'minilm-random-encoder', 'onnx', 'expect-embed.json'); break;
    case 'rerank': await rerankTask(task, dir, 'minilm-random-cross-encoder', 'onnx', 'expect-rerank.json'); break;
    case 'embed-tiny': await embedTask(task, models, 'tiny-bert-encoder', '', 'expect-embed-tiny.json'); break;
    case 'rerank-tiny': await rerankTask(task, models, 'tiny-bert-cross-encoder', '', 'expect-rerank-tiny.json'); break;
    default: console.error(`unknown task ${task}`); process.exit(2);
  }
}
