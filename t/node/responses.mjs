// The Responses API of fairgate's local mode through real clients:
//
//     node t/node/responses.mjs BASEURL [MODEL]
//
// BASEURL is the gateway's API root (http://127.0.0.1:8080/v1), MODEL the id
// it serves (stories260K).  With the openai package, client.responses.create()
// not streamed and streamed (greedy, so both give the same text); with the
// AI SDK, generateText() and streamText() on createOpenAI({ baseURL })(model),
// which calls /v1/responses; and a refusal read as an API error by each.
// Prints one "NAME: ok ..." line a step; a failure prints "NAME: FAIL why"
// and exits 1.  t/094-responses-npm.t runs it.

import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';

const [baseURL, model = 'stories260K'] = process.argv.slice(2);

if (!baseURL) {
    console.error('usage: node t/node/responses.mjs BASEURL [MODEL]');
    process.exit(2);
}

const apiKey = 'sk-fairgate-npm-test';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const params = {
    model,
    instructions: 'You tell short stories.',
    input: 'Tell me a story about a cat.',
    max_output_tokens: 24,
    temperature: 0,
};

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

function checkUsage(u, what, max) {
    check(u && Number.isInteger(u.input_tokens) && u.input_tokens > 0,
          `${what}: usage.input_tokens > 0`);
    check(Number.isInteger(u.output_tokens) && u.output_tokens > 0
          && u.output_tokens <= max, `${what}: usage.output_tokens in 1..${max}`);
    check(u.total_tokens === u.input_tokens + u.output_tokens,
          `${what}: usage.total_tokens = input + output`);
}

function checkResponse(r, what) {
    check(r.object === 'response', `${what}: object "${r.object}"`);
    check(/^resp_/.test(r.id), `${what}: id "${r.id}"`);
    check(r.model === model, `${what}: model "${r.model}"`);
    check(['completed', 'incomplete'].includes(r.status),
          `${what}: status "${r.status}"`);
    check(r.output.length === 1 && r.output[0].type === 'message'
          && r.output[0].role === 'assistant', `${what}: one assistant message`);
    const part = r.output[0].content[0];
    check(part.type === 'output_text' && part.text.length > 0,
          `${what}: an output_text part`);
    checkUsage(r.usage, what, params.max_output_tokens);
}

async function openaiSteps() {
    step = 'responses';
    const r = await client.responses.create(params);
    checkResponse(r, step);
    check(r.output_text === r.output[0].content[0].text,
          'the client\'s output_text');
    console.log(`responses: ok status=${r.status} `
                + `tokens=${r.usage.output_tokens} `
                + `text=${JSON.stringify(r.output_text)}`);

    step = 'responses stream';
    const stream = await client.responses.create({ ...params, stream: true });
    const types = [];
    let text = '';
    let last = null;
    let seq = -1;
    for await (const ev of stream) {
        check(ev.sequence_number === seq + 1,
              `sequence_number ${ev.sequence_number} after ${seq}`);
        seq = ev.sequence_number;
        types.push(ev.type);
        if (ev.type === 'response.output_text.delta') {
            text += ev.delta;
        }
        last = ev;
    }
    check(types[0] === 'response.created', `first event ${types[0]}`);
    check(['response.completed', 'response.incomplete'].includes(last.type),
          `last event ${last.type}`);
    checkResponse(last.response, step);
    check(text === r.output_text,
          `the streamed text ${JSON.stringify(text)} is the one not streamed`);
    console.log(`responses stream: ok events=${types.length} `
                + `last=${last.type} text=${JSON.stringify(text)}`);

    step = 'responses stream method';
    const runner = client.responses.stream(params);
    const final = await runner.finalResponse();
    check(final.output_text === r.output_text,
          'responses.stream().finalResponse() has the same text');
    console.log('responses stream method: ok');

    step = 'responses refused';
    try {
        await client.responses.create({ ...params,
                                        previous_response_id: 'resp_x' });
        check(false, 'previous_response_id was not refused');
    } catch (e) {
        check(e instanceof OpenAI.APIError && e.status === 400
              && e.param === 'previous_response_id',
              `an APIError 400 on previous_response_id, got ${e}`);
    }
    console.log('responses refused: ok');

    return r.output_text;
}

async function aiSdkSteps(expected) {
    const provider = createOpenAI({ baseURL, apiKey });
    const lm = provider(model);
    const opts = {
        model: lm, system: params.instructions, prompt: params.input,
        maxOutputTokens: params.max_output_tokens, temperature: 0,
        maxRetries: 0,
    };

    step = 'ai generateText';
    const g = await generateText(opts);
    check(g.text === expected, `text ${JSON.stringify(g.text)} is openai's`);
    check(['stop', 'length'].includes(g.finishReason),
          `finishReason ${g.finishReason}`);
    check(g.usage.outputTokens > 0 && g.usage.inputTokens > 0,
          'usage in and out');
    check(/^resp_/.test(g.response.id), `response id ${g.response.id}`);
    console.log(`ai generateText: ok finish=${g.finishReason} `
                + `tokens=${g.usage.outputTokens} text=${JSON.stringify(g.text)}`);

    step = 'ai streamText';
    let err = null;
    const s = streamText({ ...opts, onError: ({ error }) => { err = error; } });
    let text = '';
    let parts = 0;
    for await (const delta of s.textStream) {
        text += delta;
        parts++;
    }
    check(err === null, `no error: ${err}`);
    check(text === expected, `streamed ${JSON.stringify(text)} is openai's`);
    const usage = await s.usage;
    check(usage.outputTokens === g.usage.outputTokens,
          'as many tokens streamed as not');
    console.log(`ai streamText: ok parts=${parts} `
                + `finish=${await s.finishReason} text=${JSON.stringify(text)}`);

    // a conversation that goes on with the first answer's messages: the
    // AI SDK sends the answer as a reference to the stored item unless
    // store is false, and fairgate, which stores nothing, says so
    step = 'ai conversation';
    const messages = [{ role: 'user', content: params.input },
                      ...g.response.messages,
                      { role: 'user', content: 'And then?' }];
    const turn = { model: lm, system: params.instructions, messages,
                   maxOutputTokens: 8, temperature: 0, maxRetries: 0 };
    try {
        await generateText(turn);
        check(false, 'an item reference was not refused');
    } catch (e) {
        check(e?.statusCode === 400 && /store: false/.test(e?.message ?? ''),
              `a 400 saying store: false, got ${e}`);
    }
    const t2 = await generateText({
        ...turn, providerOptions: { openai: { store: false } } });
    check(t2.text.length > 0, 'with store: false, the next turn answers');
    console.log(`ai conversation: ok text=${JSON.stringify(t2.text)}`);

    step = 'ai refused';
    try {
        await generateText({ ...opts, providerOptions: {
            openai: { previousResponseId: 'resp_x' } } });
        check(false, 'previousResponseId was not refused');
    } catch (e) {
        check(e?.statusCode === 400 && /store/.test(e?.message ?? ''),
              `a 400 saying nothing is stored, got ${e}`);
    }
    console.log('ai refused: ok');
}

try {
    const text = await openaiSteps();
    await aiSdkSteps(text);
    console.log('all: ok');
} catch (e) {
    const detail = e instanceof OpenAI.APIError
        ? `HTTP ${e.status}: ${e.message}` : (e?.message ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    process.exit(1);
}
