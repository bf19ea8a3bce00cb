// fairgate: the chat-template reference test's reference side (t/110):
// renders every template of a cases file over every conversation with
// @huggingface/jinja and writes the results as jinja_render does.
//
//     node chat_template.mjs CASES.json > OUT.json

import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {};

for (const [tname, tpl] of Object.entries(cases.templates)) {
    let t = null;
    let perr = null;

    try {
        t = new Template(tpl.source);
    } catch (e) {
        perr = String(e.message);
    }

    for (const [cname, conv] of Object.entries(cases.conversations)) {
        const name = `${tname}/${cname}`;

        if (t === null) {
            out[name] = { ok: false, error: perr };
            continue;
        }

        try {
            out[name] = { ok: true, text: t.render({ ...tpl.vars, ...conv }) };
        } catch (e) {
            out[name] = { ok: false, error: String(e.message) };
        }
    }
}

process.stdout.write(JSON.stringify(out, null, 1) + "\n");
