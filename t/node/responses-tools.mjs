// Tool calling on the Responses API (/v1/responses) against fairgate's
// local mode, with real clients:
//
//     node t/node/responses-tools.mjs BASEURL MODEL
//
// MODEL answers with calls of get_weather (t/114-local-tool-calls.t's
// "calls" model).  The openai package's responses.create() with a flat
// function tool reads function_call items; a follow-up sends them back
// with a function_call_output (store: false: nothing is stored); the
// package's responses.stream() assembles the same calls from the events
// (output_item.added, function_call_arguments.delta and .done,
// output_item.done).  The AI SDK's generateText() and streamText() with
// a tool on createOpenAI({ baseURL })(model), which is the Responses API,
// read the calls; with an execute and two steps, the SDK sends the call
// and its result back itself.  One "NAME: ok ..." line a step; a failure
// prints "NAME: FAIL why" and exits 1.

import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';

const [baseURL, model] = process.argv.slice(2);

if (!baseURL || !model) {
    console.error('usage: node t/node/responses-tools.mjs BASEURL MODEL');
    process.exit(2);
}

const apiKey = 'sk-fairgate-npm-test';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0,
                            timeout: 60_000 });

const schema = {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
};

const params = {
    model,
    input: 'What is the weather in Paris?',
    tools: [{ type: 'function', name: 'get_weather',
              description: 'The weather in a city.', parameters: schema,
              strict: true }],
    tool_choice: 'auto',
    max_output_tokens: 16,
    temperature: 0,
    store: false,
};

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

// a Response's calls: function_call items of get_weather, Paris
function calls(r) {
    check(r.status === 'completed', `status ${r.status}`);
    const fc = r.output.filter((o) => o.type === 'function_call');
    check(fc.length > 0, 'no function_call item');

    for (const c of fc) {
        check(c.name === 'get_weather', `name ${c.name}`);
        check(JSON.parse(c.arguments).city === 'Paris',
              `arguments ${c.arguments}`);
        check(/^call_/.test(c.call_id) && /^fc_/.test(c.id),
              `ids ${c.id} ${c.call_id}`);
    }

    return fc;
}

const provider = createOpenAI({ baseURL, apiKey });

const aiTools = {
    get_weather: tool({
        description: 'The weather in a city.',
        inputSchema: jsonSchema(schema),
    }),
};

const aiOpts = {
    model: provider(model),
    tools: aiTools,
    prompt: 'What is the weather in Paris?',
    maxOutputTokens: 16,
    temperature: 0,
    maxRetries: 0,
    providerOptions: { openai: { store: false } },
};

function aiCalls(list, finish) {
    check(finish === 'tool-calls', `finishReason ${finish}`);
    check(list.length > 0, 'no tool calls');

    for (const c of list) {
        check(c.toolName === 'get_weather' && c.input?.city === 'Paris',
              `call ${JSON.stringify(c)}`);
    }
}

try {
    step = 'responses tools';
    const r = await client.responses.create(params);
    const fc = calls(r);
    console.log(`${step}: ok ${fc.length} calls`);

    step = 'responses tools follow-up';
    const next = await client.responses.create({
        ...params,
        input: [{ role: 'user', content: params.input }, ...r.output,
                ...fc.map((c) => ({ type: 'function_call_output',
                                    call_id: c.call_id,
                                    output: '{"sky":"clear"}' }))],
    });
    check(next.status === 'completed', `status ${next.status}`);
    console.log(`${step}: ok output=${next.output.length}`);

    step = 'responses tools stream';
    const stream = client.responses.stream(params);
    let events = 0;
    let done = 0;

    for await (const ev of stream) {
        events++;
        if (ev.type === 'response.function_call_arguments.done') {
            done++;
        }
    }

    const fin = await stream.finalResponse();
    const sfc = calls(fin);
    check(done === sfc.length, `${done} arguments.done, ${sfc.length} calls`);
    console.log(`${step}: ok events=${events} ${sfc.length} calls`);

    step = 'ai generateText responses tools';
    const g = await generateText(aiOpts);
    aiCalls(g.toolCalls, g.finishReason);
    check(g.usage.inputTokens > 0 && g.usage.outputTokens > 0, 'usage');
    console.log(`${step}: ok finish=${g.finishReason} `
                + `${g.toolCalls.length} calls`);

    step = 'ai streamText responses tools';
    const s = streamText(aiOpts);
    let parts = 0;

    for await (const p of s.fullStream) {
        if (p.type === 'error') {
            throw p.error;
        }
        parts++;
    }

    aiCalls(await s.toolCalls, await s.finishReason);
    console.log(`${step}: ok parts=${parts} finish=${await s.finishReason}`);

    step = 'ai responses tools two steps';
    let ran = 0;
    const two = await generateText({
        ...aiOpts,
        tools: { get_weather: tool({ ...aiTools.get_weather,
                                     execute: async () => {
                                         ran++;
                                         return { sky: 'clear' };
                                     } }) },
        stopWhen: stepCountIs(2),
    });
    check(two.steps.length === 2 && ran > 0,
          `${two.steps.length} steps, ${ran} runs`);
    console.log(`${step}: ok steps=${two.steps.length} runs=${ran}`);

} catch (e) {
    console.log(`${step}: FAIL ${e && e.message ? e.message : e}`);
    process.exit(1);
}
