// fairgate: the reference side of t/112-chat-tools-template.t: OpenAI
// chat requests with tools rendered by @huggingface/jinja as a client of
// Hugging Face's apply_chat_template gives them: the messages with their
// tool calls (arguments parsed when they are a JSON object, as the
// templates write them with tojson), tool messages with their call ids,
// text parts joined with "\n", a null content as "" (as vLLM gives it:
// Qwen 3's and Llama 3.1's templates fail on null), tools as the request
// has them (none with tool_choice "none"), and add_generation_prompt.
//
//     node chat_tools_template.mjs CASES.json > OUT.json

import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {};

function args(a) {
    try {
        const v = JSON.parse(a);
        if (v !== null && typeof v === "object" && !Array.isArray(v)) {
            return v;
        }
    } catch (e) {
        // not JSON: the string as it is
    }
    return a;
}

function content(c) {
    if (Array.isArray(c)) {
        return c.map((p) => p.text).join("\n");
    }
    return c === undefined || c === null ? "" : c;
}

function message(m) {
    const o = { role: m.role, content: content(m.content) };

    if (m.tool_calls) {
        o.tool_calls = m.tool_calls.map((c) => ({
            id: c.id,
            type: c.type,
            function: { name: c.function.name,
                        arguments: args(c.function.arguments) },
        }));
    }

    if (m.role === "tool") {
        o.tool_call_id = m.tool_call_id;
    }

    return o;
}

for (const [tname, tpl] of Object.entries(cases.templates)) {
    const t = new Template(tpl.source);

    for (const [rname, req] of Object.entries(cases.requests)) {
        const vars = { ...tpl.vars, add_generation_prompt: true,
                       messages: req.messages.map(message) };

        if (req.tools && req.tool_choice !== "none") {
            vars.tools = req.tools;
        }

        try {
            out[`${tname}/${rname}`] = { ok: true, text: t.render(vars) };
        } catch (e) {
            out[`${tname}/${rname}`] = { ok: false, error: String(e.message) };
        }
    }
}

process.stdout.write(JSON.stringify(out, null, 1) + "\n");
