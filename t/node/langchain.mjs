// LangChain's OpenAI integration (@langchain/openai) against the gateway:
//
//     node t/node/langchain.mjs local ROOT MODEL TOOLMODEL
//     node t/node/langchain.mjs dropin ROOT
//
// ROOT is the gateway's root (http://127.0.0.1:8080): /v1 for the chat
// models and embeddings, /k/v1 a location with keys (sk-lc-tiny: a key
// over its limit with any request; sk-lc-wrong: no key of the gateway's).
// local: fairgate's own engine, MODEL (stories260K) for chat and
// embeddings, TOOLMODEL a model whose answer is tool calls; ChatOpenAI's
// invoke() and stream() (the same greedy text, in pieces, with its
// usage), n = 2 through generate(), withStructuredOutput() with a JSON
// schema and a zod one (method jsonSchema: response_format json_schema),
// bindTools() and its calls read into tool_calls (whole and streamed,
// strict and required too) and taken back as ToolMessages, the Responses
// API (useResponsesApi: text and calls), and OpenAIEmbeddings'
// embedDocuments() and embedQuery().  dropin: the same client to an
// upstream that answers as OpenAI does (t/lib/Fairgate/MockUpstream.pm),
// invoke() and stream() and an upstream's 429.  Both: the gateway's 401
// and 429 read as LangChain's errors.  Each request is tagged (X-Tag:
// lc-NAME, its spaces dashes) for the test to find its access-log line;
// every request's body is kept, to check what LangChain sent.  No request
// may leave the machine (LangChain's token counting would fetch its
// tables; LangSmith would trace): the script fails if one is tried.
// Prints "NAME: ok ..." a step ("in=I out=O" the usage LangChain gave), or
// "NAME: FAIL why" and exits 1.
// t/146-langchain.t runs it.

import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { z } from 'zod';

const [mode, root, model = 'stories260K', toolModel = 'calls'] =
    process.argv.slice(2);

if (!root || (mode !== 'local' && mode !== 'dropin')) {
    console.error('usage: node t/node/langchain.mjs local|dropin ROOT '
                  + '[MODEL [TOOLMODEL]]');
    process.exit(2);
}

process.env.LANGSMITH_TRACING = 'false';
process.env.LANGCHAIN_TRACING_V2 = 'false';

// every request: its URL and body; none but to the gateway
const sent = [];
const outside = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (!url.startsWith(root)) {
        outside.push(url);
        throw new Error(`a request to ${url}, not the gateway`);
    }
    let body = null;
    try {
        body = JSON.parse(init?.body ?? 'null');
    } catch {
        body = init?.body;
    }
    sent.push({ url, body });
    return realFetch(input, init);
};

const apiKey = 'sk-lc-test';
let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

// a call's options tagging its request: invoke() passes on the OpenAI
// request options of "options", stream() all of the call's options
function tag(name, more = {}) {
    const headers = { 'X-Tag': `lc-${name.replaceAll(' ', '-')}` };
    return { ...more, headers, options: { headers } };
}

// the body LangChain sent last
function last() {
    return sent[sent.length - 1]?.body ?? {};
}

function chat(fields = {}) {
    return new ChatOpenAI({
        model, apiKey, maxRetries: 0, timeout: 60_000, temperature: 0,
        maxTokens: 24, configuration: { baseURL: `${root}/v1` }, ...fields,
    });
}

function usage(m) {
    const u = m.usage_metadata;
    check(u && u.input_tokens > 0 && u.output_tokens > 0
          && u.total_tokens === u.input_tokens + u.output_tokens,
          `usage_metadata ${JSON.stringify(u)}`);
    return `in=${u.input_tokens} out=${u.output_tokens}`;
}

const prompt = [new HumanMessage('Once upon a time, there was a')];

// invoke() and stream(): the same text, the stream in pieces; returns the
// text
async function invokeAndStream(llm, want) {
    step = 'invoke';
    const m = await llm.invoke(prompt, tag(step));
    check(typeof m.content === 'string' && m.content.length > 0,
          `content ${JSON.stringify(m.content)}`);
    check(want === undefined || m.content === want,
          `content ${JSON.stringify(m.content)}, not ${want}`);
    const finish = m.response_metadata?.finish_reason;
    check(finish === 'stop' || finish === 'length', `finish ${finish}`);
    check(last().stream !== true, 'invoke() streamed');
    console.log(`${step}: ok ${usage(m)} finish=${finish} `
                + `text=${JSON.stringify(m.content)}`);

    step = 'stream';
    let whole;
    let pieces = 0;
    for await (const c of await llm.stream(prompt, tag(step))) {
        if (typeof c.content === 'string' && c.content.length > 0) {
            pieces++;
        }
        whole = whole === undefined ? c : whole.concat(c);
    }
    check(last().stream === true
          && last().stream_options?.include_usage === true,
          `stream ${last().stream}, stream_options `
          + JSON.stringify(last().stream_options));
    check(whole.content === m.content,
          `streamed ${JSON.stringify(whole.content)}, not as invoke()`);
    check(pieces >= 2, `the text in ${pieces} piece(s)`);
    console.log(`${step}: ok ${usage(whole)} pieces=${pieces}`);
    return m.content;
}

// a key over its limit, and one the gateway does not know: LangChain's
// errors, with the gateway's status and message
async function refusals() {
    for (const [name, key, status, code] of [
        ['401', 'sk-lc-wrong', 401, 'MODEL_AUTHENTICATION'],
        ['429', 'sk-lc-tiny', 429, 'MODEL_RATE_LIMIT']])
    {
        step = name;
        const llm = chat({ apiKey: key,
                           configuration: { baseURL: `${root}/k/v1` } });
        let err;
        try {
            await llm.invoke(prompt, tag(step));
        } catch (e) {
            err = e;
        }
        check(err, 'no error');
        check(err.status === status && err.lc_error_code === code,
              `status ${err.status}, lc_error_code ${err.lc_error_code}: `
              + err.message);
        const msg = err.error?.message;
        check(typeof msg === 'string' && err.message.includes(msg),
              `the message "${err.message}" has the body's "${msg}"`);
        console.log(`${step}: ok ${err.status} ${code} `
                    + `message=${JSON.stringify(msg)}`);
    }
}

// n = 2: generate() gives both choices, the usage of both
async function choices() {
    step = 'n';
    const llm = chat({ n: 2, temperature: 1 });
    const r = await llm.generate([prompt], tag(step, { seed: 7 }));
    const g = r.generations[0];
    check(last().n === 2, `n ${last().n} sent`);
    check(g.length === 2 && g.every((x) => x.text.length > 0),
          `${g.length} generations: ${JSON.stringify(g.map((x) => x.text))}`);
    const u = r.llmOutput?.tokenUsage ?? {};
    check(u.promptTokens > 0 && u.completionTokens > 0,
          `tokenUsage ${JSON.stringify(u)}`);
    console.log(`${step}: ok choices=${g.length} in=${u.promptTokens} `
                + `out=${u.completionTokens}`);
}

const schema = {
    type: 'object',
    properties: {
        name: { type: 'string', maxLength: 12 },
        age: { type: 'integer', minimum: 0, maximum: 99 },
        pet: { type: 'string', enum: ['cat', 'dog'] },
    },
    required: ['name', 'age', 'pet'],
    additionalProperties: false,
};

// the schema above, checked by hand
function valid(v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v)
        && Object.keys(v).every((k) => k in schema.properties)
        && typeof v.name === 'string' && [...v.name].length <= 12
        && Number.isInteger(v.age) && v.age >= 0 && v.age <= 99
        && (v.pet === 'cat' || v.pet === 'dog');
}

// withStructuredOutput(): response_format json_schema, the grammar making
// a model that knows no JSON answer an object of the schema
async function structured() {
    step = 'structured';
    const llm = chat({ temperature: 1, maxTokens: 120 })
        .withStructuredOutput(schema, { name: 'child', method: 'jsonSchema',
                                        strict: true });
    const v = await llm.invoke([new HumanMessage('Tell me about a child.')],
                               tag(step, { seed: 3 }));
    const f = last().response_format;
    check(f?.type === 'json_schema' && f.json_schema?.name === 'child'
          && f.json_schema.strict === true,
          `response_format ${JSON.stringify(f)}`);
    check(valid(v), `object ${JSON.stringify(v)}`);
    console.log(`${step}: ok object=${JSON.stringify(v)}`);

    // a zod schema, as most write them: its int() bounds are JavaScript's
    // safe integers, 16 digits; its date() a format and its pattern; a
    // number's bounds
    step = 'structured zod';
    const Child = z.object({ name: z.string().max(12), age: z.number().int(),
                             born: z.iso.date(),
                             score: z.number().min(0).max(1),
                             pet: z.enum(['cat', 'dog']) });
    const zv = await chat({ temperature: 1, maxTokens: 120 })
        .withStructuredOutput(Child, { name: 'child', method: 'jsonSchema' })
        .invoke([new HumanMessage('Tell me about a child.')],
                tag(step, { seed: 3 }));
    const age = last().response_format?.json_schema?.schema?.properties?.age;
    const born = last().response_format.json_schema.schema.properties.born;
    check(age?.maximum === Number.MAX_SAFE_INTEGER
          && born?.format === 'date' && born.pattern,
          `age's schema ${JSON.stringify(age)}, born's `
          + JSON.stringify(born));
    check(Child.safeParse(zv).success, `object ${JSON.stringify(zv)}`);
    console.log(`${step}: ok object=${JSON.stringify(zv)}`);
}

const weather = {
    type: 'function',
    function: {
        name: 'get_weather', description: 'The weather in a city.',
        parameters: { type: 'object',
                      properties: { city: { type: 'string' } },
                      required: ['city'] },
    },
};

// the calls of a message: each get_weather of Paris, ids their own
function calls(m, idre) {
    const tc = m.tool_calls ?? [];
    check(tc.length >= 1 && (m.invalid_tool_calls ?? []).length === 0,
          `tool_calls ${JSON.stringify(tc)}, invalid `
          + JSON.stringify(m.invalid_tool_calls));
    for (const c of tc) {
        check(c.name === 'get_weather' && c.args?.city === 'Paris'
              && idre.test(c.id ?? ''), `call ${JSON.stringify(c)}`);
    }
    check(new Set(tc.map((c) => c.id)).size === tc.length, 'ids repeated');
    return tc;
}

// bindTools(): the model's calls read into tool_calls, whole and
// streamed, also strict and required; then taken back with their results
async function tools() {
    step = 'tools';
    const llm = chat({ model: toolModel, maxTokens: 3 }).bindTools([weather]);
    const m = await llm.invoke(prompt, tag(step));
    check(last().tools?.[0]?.function?.name === 'get_weather',
          `tools sent ${JSON.stringify(last().tools)}`);
    const tc = calls(m, /^call_[0-9A-Za-z]{24}$/);
    check(m.response_metadata?.finish_reason === 'tool_calls',
          `finish ${m.response_metadata?.finish_reason}`);
    console.log(`${step}: ok calls=${tc.length} ${usage(m)}`);

    step = 'tools stream';
    let whole;
    for await (const c of await llm.stream(prompt, tag(step))) {
        whole = whole === undefined ? c : whole.concat(c);
    }
    const st = calls(whole, /^call_[0-9A-Za-z]{24}$/);
    check(st.length === tc.length, `${st.length} calls, not ${tc.length}`);
    console.log(`${step}: ok calls=${st.length} ${usage(whole)}`);

    step = 'tools required';
    const strict = chat({ model: toolModel, maxTokens: 3 })
        .bindTools([weather], { strict: true, tool_choice: 'any' });
    const q = await strict.invoke(prompt, tag(step));
    check(last().tool_choice === 'required'
          && last().tools?.[0]?.function?.strict === true,
          `tool_choice ${JSON.stringify(last().tool_choice)}, tools `
          + JSON.stringify(last().tools));
    console.log(`${step}: ok calls=${calls(q, /^call_/).length} `
                + usage(q));

    step = 'tools results';
    const back = [...prompt, m, ...tc.map((c) => new ToolMessage(
        { tool_call_id: c.id, content: 'Sunny, 21 C.' }))];
    const r = await llm.invoke(back, tag(step));
    const msgs = last().messages ?? [];
    check(msgs.length === 2 + tc.length
          && msgs[1].role === 'assistant'
          && msgs[1].tool_calls?.length === tc.length
          && msgs[2].role === 'tool' && msgs[2].tool_call_id === tc[0].id,
          `messages sent ${JSON.stringify(msgs)}`);
    console.log(`${step}: ok ${usage(r)}`);
}

// useResponsesApi: the same greedy text through /v1/responses; calls read
// from its function_call items
async function responses(text) {
    step = 'responses';
    const m = await chat({ useResponsesApi: true }).invoke(prompt, tag(step));
    check(sent[sent.length - 1].url.endsWith('/responses'),
          `sent to ${sent[sent.length - 1].url}`);
    check(m.text === text, `text ${JSON.stringify(m.text)}, not as chat's`);
    console.log(`${step}: ok ${usage(m)}`);

    step = 'responses tools';
    const t = await chat({ model: toolModel, maxTokens: 3,
                           useResponsesApi: true })
        .bindTools([weather]).invoke(prompt, tag(step));
    check(last().tools?.[0]?.name === 'get_weather',
          `tools sent ${JSON.stringify(last().tools)}`);
    console.log(`${step}: ok calls=${calls(t, /^call_/).length} `
                + usage(t));
}

// OpenAIEmbeddings: embedDocuments() and embedQuery() of the same text
// agree
async function embeddings() {
    step = 'embeddings';
    const emb = new OpenAIEmbeddings({
        model, apiKey, maxRetries: 0,
        configuration: { baseURL: `${root}/v1`,
                         defaultHeaders: { 'X-Tag': 'lc-embeddings' } },
    });
    const texts = ['one two three', 'a cat and a dog'];
    const d = await emb.embedDocuments(texts);
    check(d.length === 2 && d.every((v) => v.length === d[0].length
                                    && v.every(Number.isFinite)),
          `${d.length} vectors of ${d.map((v) => v.length)}`);
    check(d[0].some((x, i) => x !== d[1][i]), 'two texts, one vector');
    const q = await emb.embedQuery(texts[0]);
    check(q.length === d[0].length
          && q.every((x, i) => Math.abs(x - d[0][i]) < 1e-5),
          'embedQuery() differs from embedDocuments()');
    console.log(`${step}: ok vectors=2 width=${q.length}`);
}

// an upstream's 429, passed on: LangChain's rate-limit error with its
// message
async function upstream429() {
    step = 'upstream 429';
    const llm = chat({ model: 'm', configuration: {
        baseURL: `${root}/v1`,
        defaultHeaders: { 'X-Mock-Status': '429' } } });
    let err;
    try {
        await llm.invoke(prompt, tag(step));
    } catch (e) {
        err = e;
    }
    check(err?.status === 429 && err.lc_error_code === 'MODEL_RATE_LIMIT'
          && err.message.includes(err.error?.message ?? '\0'),
          `error ${err?.status} ${err?.lc_error_code}: ${err?.message}`);
    console.log(`${step}: ok ${err.status} `
                + `message=${JSON.stringify(err.error.message)}`);
}

try {
    if (mode === 'local') {
        const text = await invokeAndStream(chat());
        await choices();
        await structured();
        await tools();
        await responses(text);
        await embeddings();
    } else {
        await invokeAndStream(chat({ model: 'm', maxTokens: 5 }),
                              'tok '.repeat(5));
        await upstream429();
    }
    await refusals();
    check(outside.length === 0, `requests outside: ${outside}`);
    console.log('all: ok');
} catch (e) {
    const detail = e?.status ? `HTTP ${e.status}: ${e.message}`
                             : (e?.stack ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    if (outside.length) {
        console.log(`requests outside the gateway: ${outside.join(' ')}`);
    }
    process.exit(1);
}
