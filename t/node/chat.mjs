// The official openai npm package against fairgate's local mode:
//
//     node t/node/chat.mjs BASEURL [MODEL]
//
// BASEURL is the gateway's API root (http://127.0.0.1:8080/v1), MODEL the id
// it serves (stories260K).  Lists the models, completes a chat without and
// with streaming (greedy, so both give the same text), and prints one
// "NAME: ok ..." line a step; a failure prints "NAME: FAIL why" and exits 1.
// t/090-openai-npm.t runs it.

import OpenAI from 'openai';

const [baseURL, model = 'stories260K'] = process.argv.slice(2);

if (!baseURL) {
    console.error('usage: node t/node/chat.mjs BASEURL [MODEL]');
    process.exit(2);
}

const client = new OpenAI({
    baseURL,
    apiKey: 'sk-fairgate-npm-test',
    maxRetries: 0,
    timeout: 60_000,
});

const messages = [
    { role: 'system', content: 'You tell short stories.' },
    { role: 'user', content: 'Tell me a story about a cat.' },
];
const params = { model, messages, max_tokens: 24, temperature: 0, seed: 1 };

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

function checkUsage(usage, what) {
    check(usage && Number.isInteger(usage.prompt_tokens)
          && usage.prompt_tokens > 0, `${what}: usage.prompt_tokens > 0`);
    check(Number.isInteger(usage.completion_tokens)
          && usage.completion_tokens > 0
          && usage.completion_tokens <= params.max_tokens,
          `${what}: usage.completion_tokens in 1..${params.max_tokens}`);
    check(usage.total_tokens === usage.prompt_tokens + usage.completion_tokens,
          `${what}: usage.total_tokens = prompt + completion`);
}

try {
    step = 'models';
    const ids = [];
    for await (const m of client.models.list()) {
        ids.push(m.id);
    }
    check(ids.includes(model), `"${model}" in ${JSON.stringify(ids)}`);
    console.log(`models: ok ${JSON.stringify(ids)}`);

    step = 'chat';
    const r = await client.chat.completions.create(params);
    check(r.object === 'chat.completion', `object "${r.object}"`);
    check(typeof r.id === 'string' && r.id.length > 0, 'an id');
    check(r.model === model, `model "${r.model}"`);
    check(r.choices.length === 1, `${r.choices.length} choices`);
    const c = r.choices[0];
    check(c.message.role === 'assistant', `role "${c.message.role}"`);
    check(typeof c.message.content === 'string'
          && c.message.content.length > 0, 'some content');
    check(['stop', 'length'].includes(c.finish_reason),
          `finish_reason "${c.finish_reason}"`);
    checkUsage(r.usage, 'chat');
    console.log(`chat: ok finish=${c.finish_reason} `
                + `tokens=${r.usage.completion_tokens} `
                + `text=${JSON.stringify(c.message.content)}`);

    step = 'chat stream';
    const stream = await client.chat.completions.create({
        ...params, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let finish = null;
    let usage = null;
    for await (const k of stream) {
        chunks++;
        check(k.object === 'chat.completion.chunk', `chunk object "${k.object}"`);
        check(k.model === model, `chunk model "${k.model}"`);
        if (k.usage) {
            check(k.choices.length === 0, 'the usage chunk has no choices');
            usage = k.usage;
            continue;
        }
        check(k.choices.length === 1, `${k.choices.length} choices in a chunk`);
        check(finish === null, 'no chunk after the finish_reason');
        text += k.choices[0].delta.content ?? '';
        finish = k.choices[0].finish_reason ?? null;
    }
    check(['stop', 'length'].includes(finish), `finish_reason "${finish}"`);
    checkUsage(usage, 'chat stream');
    check(text === c.message.content,
          `the streamed text ${JSON.stringify(text)} is the one not streamed`);
    check(usage.completion_tokens === r.usage.completion_tokens,
          'as many tokens streamed as not');
    console.log(`chat stream: ok chunks=${chunks} finish=${finish} `
                + `tokens=${usage.completion_tokens} text=${JSON.stringify(text)}`);

    console.log('all: ok');
} catch (e) {
    const detail = e instanceof OpenAI.APIError
        ? `HTTP ${e.status}: ${e.message}` : (e?.message ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    process.exit(1);
}
