// llama.cpp behind the line protocol of t/llamacpp/fg_engine_drive.c: the
// side of llama.cpp in the comparison with fairgate's engine on the same
// GGUF file.  node-llama-cpp's prebuilt CPU build (the CPU variant it
// picks for this machine, as llama.cpp's own binaries do), no GPU.
//
// Usage: node llamacpp_drive.mjs MODEL THREADS
//
// Commands on stdin, one a line, each answered by one JSON line on stdout
// ({"error": "..."} when it fails); see fg_engine_drive.c for each:
//
//   greedy N T1 T2 ...   {"tokens": [...]}
//   decode B N           B sequences in one context, their prompts in one
//                        batch; the N steps after the first token are
//                        batches of B tokens: {"tok_s", "s", "cpu_s"}
//   prefill N            a prompt of N tokens in one batch, to its first
//                        token: {"tok_s", "s", "cpu_s"}
//   mem                  {"rss_kib", "hwm_kib", "kv_bytes_token",
//                        "base_rss_kib": node's own before the model,
//                        "cpu_build": the CPU variant llama.cpp loaded}
//   load PATH            llama.cpp only: another model in place of the
//                        one before (node-llama-cpp starts once for many
//                        files): mem's answer
//
// A context is made for each decode and prefill and its KV cache sized for
// it (llama.cpp rounds each sequence's up to 256 positions); greedy
// commands share one of 1024 positions.  The bytes per position are read
// from llama.cpp's own log line of the cache's size.

import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import readline from "node:readline";

const PROMPT = 32;
const GREEDY = 1024;

const [modelPath, threadsArg] = process.argv.slice(2);
const threads = Number(threadsArg);

if (!modelPath || !(threads > 0)) {
    process.stderr.write("usage: node llamacpp_drive.mjs MODEL THREADS\n");
    process.exit(2);
}

const baseRss = Math.round(process.memoryUsage().rss / 1024);
let kvBytes = null, kvCells = 0, cpuBuild = null;
let kvUnified = false;

// "llama_kv_cache: size = 0.50 MiB (256 cells, 2 layers, 4/4 seqs), ...":
// cells of each sequence's stream unless the cache is unified; the size
// has two decimals: the largest cache gives the bytes per position
function readLog(level, message) {
    for (const line of message.split("\n")) {
        const c = /libggml-cpu-([\w-]+)\.so/.exec(line);
        if (c)
            cpuBuild = c[1];

        const u = /kv_unified\s*=\s*(\w+)/.exec(line);
        if (u)
            kvUnified = u[1] === "true";

        const m = new RegExp("llama_kv_cache: size =\\s*([\\d.]+) MiB"
                             + " \\(\\s*(\\d+) cells,.*?(\\d+)/\\d+ seqs")
            .exec(line);
        const cells = m && Number(m[2]) * (kvUnified ? 1 : Number(m[3]));
        if (m && cells > kvCells) {
            kvCells = cells;
            kvBytes = Math.round(Number(m[1]) * 1048576 / cells);
        }

        if (line && (level === LlamaLogLevel.error
                     || level === LlamaLogLevel.fatal))
            process.stderr.write(`llama.cpp: ${line}\n`);
    }
}

const llama = await getLlama({
    gpu: false, build: "never", maxThreads: 0,
    logLevel: LlamaLogLevel.log, logger: readLog
});
let model = null, vocab = 0, greedyCtx = null;

// the i-th prompt token of sequence s, as fg_engine_drive has it
function token(s, i) {
    return 3 + (s * 7919 + i * 104729) % (vocab - 3);
}

function context(sequences, positions, batch) {
    return model.createContext({
        sequences, contextSize: positions,
        batchSize: Math.max(batch, 32),
        threads: {ideal: threads, min: threads}
    });
}

// the first n tokens that evaluate(prompt) yields, with their times
async function generate(seq, prompt, n, onToken) {
    const out = [];

    for await (const t of seq.evaluate(prompt,
                                       {temperature: 0, yieldEogToken: true})) {
        out.push(t);
        onToken?.(out.length);
        if (out.length >= n)
            break;
    }

    return out;
}

// one context for every greedy command, its sequence cleared after each
async function greedy(args) {
    const [n, ...prompt] = args.map(Number);

    if (prompt.length + n > GREEDY)
        throw new Error(`greedy: 1 to ${GREEDY} positions in all`);

    greedyCtx ??= await context(1, GREEDY, GREEDY);
    const seq = greedyCtx.getSequence();

    try {
        return {tokens: await generate(seq, prompt, n)};
    } finally {
        seq.dispose();
    }
}

// another model in place of the one before
async function load([path]) {
    await greedyCtx?.dispose();
    await model?.dispose();
    greedyCtx = null;
    kvBytes = null;
    kvCells = 0;

    model = await llama.loadModel({modelPath: path});

    // the rows of the embeddings, as the engine counts its vocabulary
    vocab = Number(model.fileInfo.fullTensorInfo
        .find((t) => t.name === "token_embd.weight").dimensions[1]);

    return mem();
}

// CPU seconds of the process (its threads together) since cpu0
function cpuSince(cpu0) {
    const u = process.cpuUsage(cpu0);
    return (u.user + u.system) / 1e6;
}

async function decode(args) {
    const [b, n] = args.map(Number);
    const ctx = await context(b, PROMPT + n + 1, b * PROMPT);
    let first = 0, start = 0, cpu0 = null;

    try {
        const seqs = Array.from({length: b}, () => ctx.getSequence());

        await Promise.all(seqs.map((seq, s) => generate(
            seq, Array.from({length: PROMPT}, (_, i) => token(s, i)), n + 1,
            (k) => {
                if (k === 1 && ++first === b) {
                    start = performance.now();
                    cpu0 = process.cpuUsage();
                }
            })));

        const s = (performance.now() - start) / 1e3;
        return {tok_s: b * n / s, s, cpu_s: cpuSince(cpu0)};
    } finally {
        await ctx.dispose();
    }
}

async function prefill(args) {
    const n = Number(args[0]);
    const ctx = await context(1, n + 1, n);

    try {
        const prompt = Array.from({length: n}, (_, i) => token(0, i));
        const start = performance.now();
        const cpu0 = process.cpuUsage();

        await generate(ctx.getSequence(), prompt, 1);

        const s = (performance.now() - start) / 1e3;
        return {tok_s: n / s, s, cpu_s: cpuSince(cpu0)};
    } finally {
        await ctx.dispose();
    }
}

function mem() {
    return {
        rss_kib: Math.round(process.memoryUsage().rss / 1024),
        hwm_kib: process.resourceUsage().maxRSS,
        kv_bytes_token: kvBytes, base_rss_kib: baseRss,
        cpu_build: cpuBuild
    };
}

const commands = {greedy, decode, prefill, mem, load};

await load([modelPath]);

for await (const line of readline.createInterface({input: process.stdin})) {
    const [name, ...args] = line.trim().split(/\s+/);

    if (name === "quit")
        break;

    let answer;
    try {
        if (!commands[name])
            throw new Error(`unknown command: ${name}`);
        answer = await commands[name](args);
    } catch (e) {
        answer = {error: String(e.message ?? e).replace(/\s+/g, " ")};
    }

    process.stdout.write(JSON.stringify(answer) + "\n");
}

await model.dispose();
await llama.dispose();
