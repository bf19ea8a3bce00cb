// The Vercel AI SDK's tool calling against fairgate's local mode:
//
//     node t/node/tools-aisdk.mjs BASEURL MODEL
//
// MODEL answers with calls of get_weather (t/114-local-tool-calls.t's
// "calls" model).  generateText() and streamText() with a tool whose input
// schema is plain JSON Schema (jsonSchema()), on the chat completions API
// (createOpenAI().chat(); t/node/responses-tools.mjs does the same on the
// Responses API, createOpenAI()(model)), must read
// the calls: their names, their arguments parsed and checked against the
// schema by the SDK, the finish reason, the usage.  One "NAME: ok ..."
// line a step; a failure prints "NAME: FAIL why" and exits 1.

import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, streamText, tool } from 'ai';

const [baseURL, model] = process.argv.slice(2);

if (!baseURL || !model) {
    console.error('usage: node t/node/tools-aisdk.mjs BASEURL MODEL');
    process.exit(2);
}

const provider = createOpenAI({ baseURL, apiKey: 'sk-fairgate-npm-test' });

// no execute: the SDK returns the calls rather than running them
const tools = {
    get_weather: tool({
        description: 'The weather in a city.',
        inputSchema: jsonSchema({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
        }),
    }),
};

const opts = {
    model: provider.chat(model),
    tools,
    prompt: 'What is the weather in Paris?',
    maxOutputTokens: 16,
    temperature: 0,
    maxRetries: 0,
};

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

function checkCalls(calls, finish) {
    check(finish === 'tool-calls', `finishReason ${finish}`);
    check(calls.length > 0, 'no tool calls');

    for (const c of calls) {
        check(c.toolName === 'get_weather', `tool ${c.toolName}`);
        check(c.input && c.input.city === 'Paris',
              `input ${JSON.stringify(c.input)}`);
        check(typeof c.toolCallId === 'string' && c.toolCallId.length > 0,
              'a call id');
    }
}

try {
    step = 'ai generateText tools';
    const g = await generateText(opts);
    checkCalls(g.toolCalls, g.finishReason);
    check(g.usage.inputTokens > 0 && g.usage.outputTokens > 0, 'usage');
    console.log(`${step}: ok finish=${g.finishReason} `
                + `${g.toolCalls.length} calls`);

    step = 'ai streamText tools';
    const s = streamText(opts);
    let parts = 0;

    for await (const p of s.fullStream) {
        if (p.type === 'error') {
            throw p.error;
        }
        parts++;
    }

    checkCalls(await s.toolCalls, await s.finishReason);
    console.log(`${step}: ok parts=${parts} finish=${await s.finishReason} `
                + `${(await s.toolCalls).length} calls`);

} catch (e) {
    console.log(`${step}: FAIL ${e && e.message ? e.message : e}`);
    process.exit(1);
}
