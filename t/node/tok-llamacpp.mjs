// The llama.cpp side of t/116-tokenizer-llamacpp.t: llama.cpp's tokens
// (node-llama-cpp's prebuilt CPU build, no GPU) for each line of a corpus,
// for each GGUF file named, one line out per corpus line:
//
//     S ids|T ids|N ids|M ids
//
// S: the line with special tokens parsed; T: the line as text; N and M:
// the same of the line in NFC, for the lines that are not (llama.cpp does
// not normalize).  No BOS (node-llama-cpp's tokenize never adds it).
//
// usage: node tok-llamacpp.mjs CORPUS.jsonl GGUF OUT [GGUF OUT ...]

import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [corpus, ...pairs] = process.argv.slice(2);

if (!corpus || pairs.length === 0 || pairs.length % 2 !== 0) {
    process.stderr.write("usage: node tok-llamacpp.mjs CORPUS GGUF OUT ...\n");
    process.exit(2);
}

const lines = fs.readFileSync(corpus, "utf8").split("\n")
    .filter((l) => l.length > 0).map((l) => JSON.parse(l));

const llama = await getLlama({gpu: false, build: "never",
                              logLevel: LlamaLogLevel.error});

for (let i = 0; i < pairs.length; i += 2) {
    const model = await llama.loadModel({modelPath: pairs[i]});
    const ids = (text, special) =>
        Array.from(model.tokenize(text, special)).join(" ");
    const res = lines.map((line) => {
        const nfc = line.normalize("NFC");
        return `S ${ids(line, true)}|T ${ids(line, false)}`
            + (nfc === line ? ""
               : `|N ${ids(nfc, true)}|M ${ids(nfc, false)}`);
    });

    fs.writeFileSync(pairs[i + 1], res.join("\n") + "\n");
    process.stderr.write(`${pairs[i]}: ${lines.length} lines\n`);
    await model.dispose();
}

await llama.dispose();
