// The official openai npm package against fairgate's local mode:
//
//     node t/node/chat.mjs BASEURL [MODEL]
//
// BASEURL is the gateway's API root (http://127.0.0.1:8080/v1), MODEL the id
// it serves (stories260K).  Lists the models, completes a chat without and
// with streaming (greedy, so both give the same text), asks for logprobs
// (chat, streamed and not, and completions, with echo the prompt's too),
// penalties and logit_bias, two choices (n = 2, streamed and not, and
// completions), and reads an out-of-range penalty's 400; prints one
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

// an entry of chat's logprobs.content, as OpenAI's types describe it
function checkEntry(e, top, what) {
    check(typeof e.token === 'string', `${what}: token a string`);
    check(typeof e.logprob === 'number' && e.logprob <= 0,
          `${what}: logprob <= 0`);
    check(Array.isArray(e.bytes)
          && Buffer.from(e.bytes).toString('utf8') === e.token,
          `${what}: bytes spell the token`);
    check(Array.isArray(e.top_logprobs) && e.top_logprobs.length === top,
          `${what}: ${top} top_logprobs`);
    check(top === 0 || e.top_logprobs[0].logprob >= e.logprob,
          `${what}: the best alternative first`);
}

async function logprobs(plain) {
    step = 'logprobs';
    const r = await client.chat.completions.create({
        ...params, logprobs: true, top_logprobs: 3,
    });
    const content = r.choices[0].logprobs?.content;
    check(Array.isArray(content) && content.length > 0,
          'choices[0].logprobs.content');
    content.forEach((e, i) => checkEntry(e, 3, `content[${i}]`));
    check(content.map((e) => e.token).join('') === plain.message.content,
          'the tokens spell the text');
    check(r.usage.completion_tokens === content.length,
          'usage: the same tokens, one entry each');
    console.log(`logprobs: ok entries=${content.length}`);

    step = 'logprobs stream';
    const stream = await client.chat.completions.create({
        ...params, logprobs: true, top_logprobs: 3, stream: true,
    });
    const got = [];
    for await (const k of stream) {
        got.push(...(k.choices[0]?.logprobs?.content ?? []));
    }
    check(JSON.stringify(got) === JSON.stringify(content),
          'the streamed entries are those not streamed');
    console.log(`logprobs stream: ok entries=${got.length}`);
}

async function completionLogprobs() {
    step = 'completion logprobs';
    const r = await client.completions.create({
        model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0,
        logprobs: 2,
    });
    const lp = r.choices[0].logprobs;
    check(lp && lp.tokens.length === 8 && lp.token_logprobs.length === 8
          && lp.top_logprobs.length === 8 && lp.text_offset.length === 8,
          'tokens, token_logprobs, top_logprobs, text_offset: 8 each');
    check(lp.tokens.join('') === r.choices[0].text,
          'the tokens spell the text');
    check(lp.top_logprobs.every((t, i) => Object.keys(t).length <= 3
                                          && lp.tokens[i] in t),
          'at most 2 alternatives and the token itself each');
    console.log('completion logprobs: ok '
                + `text=${JSON.stringify(r.choices[0].text)}`);
}

// echo with logprobs: the prompt's entries first (the first one's null),
// offsets from 0 through the completion's, streamed and not, and
// max_tokens 0 (the prompt scored)
async function completionEcho() {
    step = 'completion echo logprobs';
    const req = { model, prompt: 'Once upon a time', max_tokens: 4,
                  temperature: 0, logprobs: 2, echo: true };
    const r = await client.completions.create(req);
    const lp = r.choices[0].logprobs;
    const n = lp.tokens.length;
    check(n > 4 && lp.token_logprobs[0] === null
          && lp.top_logprobs[0] === null,
          'the prompt\'s first token: null log-probability, null top');
    check(lp.token_logprobs.slice(1).every((v) => v <= 0)
          && lp.text_offset[0] === 0
          && lp.text_offset.every((o, i) => i === 0
                 || o === lp.text_offset[i - 1] + lp.tokens[i - 1].length),
          'log-probabilities, offsets from 0 through the completion');
    check(r.choices[0].text.startsWith('Once upon a time'), 'the echo');

    step = 'completion echo logprobs stream';
    const stream = await client.completions.create({ ...req, stream: true });
    const got = [];
    for await (const k of stream) {
        got.push(...(k.choices[0]?.logprobs?.tokens ?? []));
    }
    check(got.join('|') === lp.tokens.join('|'), 'the same tokens');

    step = 'completion echo max_tokens 0';
    const s = await client.completions.create({ ...req, max_tokens: 0 });
    check(s.choices[0].logprobs.tokens.length === n - 4
          && s.usage.completion_tokens === 0, 'the prompt\'s alone');
    console.log(`completion echo logprobs: ok tokens=${n}`);
}

async function penalties() {
    step = 'penalties';
    const r = await client.chat.completions.create({
        ...params, frequency_penalty: 1.5, presence_penalty: 0.5,
        logprobs: true,
    });
    check(r.choices[0].message.content.length > 0, 'some content');
    console.log('penalties: ok '
                + `text=${JSON.stringify(r.choices[0].message.content)}`);

    step = 'logit_bias';
    const b = await client.chat.completions.create({
        ...params, max_tokens: 6, logit_bias: { 300: 100 }, logprobs: true,
    });
    const toks = b.choices[0].logprobs.content.map((e) => e.token);
    check(toks.length === 6 && toks.every((t) => t === toks[0]),
          `one token six times: ${JSON.stringify(toks)}`);
    console.log(`logit_bias: ok token=${JSON.stringify(toks[0])}`);

    step = 'bad penalty';
    try {
        await client.chat.completions.create({
            ...params, frequency_penalty: 3,
        });
        check(false, 'frequency_penalty 3 was accepted');
    } catch (e) {
        check(e instanceof OpenAI.BadRequestError,
              `a BadRequestError, not ${e?.constructor?.name}: ${e?.message}`);
        check(e.param === 'frequency_penalty', `param "${e.param}"`);
    }
    console.log('bad penalty: ok 400 frequency_penalty');
}

// n = 2, seeded and sampled: two choices in order, each streamed under
// its index as it is not streamed, usage the prompt once and both
async function choices() {
    step = 'n=2';
    const req = { ...params, n: 2, temperature: 1, seed: 11 };
    const r = await client.chat.completions.create(req);
    check(r.choices.length === 2, `${r.choices.length} choices`);
    check(r.choices[0].index === 0 && r.choices[1].index === 1,
          'indices 0 and 1, in order');
    r.choices.forEach((c, i) => check(['stop', 'length']
                                      .includes(c.finish_reason),
                                      `choices[${i}].finish_reason`));
    const single = await client.chat.completions.create({ ...req, n: 1 });
    check(r.usage.prompt_tokens === single.usage.prompt_tokens,
          'usage: the prompt once');
    check(r.usage.completion_tokens > single.usage.completion_tokens
          && r.usage.completion_tokens <= 2 * params.max_tokens,
          `usage: both choices' tokens (${r.usage.completion_tokens})`);
    check(r.choices[0].message.content === single.choices[0].message.content,
          'choice 0 is the answer of n = 1 with the seed');
    console.log(`n=2: ok tokens=${r.usage.completion_tokens}`);

    step = 'n=2 stream';
    const stream = await client.chat.completions.create({
        ...req, stream: true, stream_options: { include_usage: true },
    });
    const text = ['', ''];
    const finish = [null, null];
    let usage = null;
    for await (const k of stream) {
        if (k.usage) {
            usage = k.usage;
            continue;
        }
        for (const c of k.choices) {
            check(c.index === 0 || c.index === 1, `index ${c.index}`);
            text[c.index] += c.delta.content ?? '';
            finish[c.index] ??= c.finish_reason ?? null;
        }
    }
    check(finish.every((f) => ['stop', 'length'].includes(f)),
          `finish_reasons ${JSON.stringify(finish)}`);
    check(text[0] === r.choices[0].message.content
          && text[1] === r.choices[1].message.content,
          'each choice streamed is its text not streamed');
    check(usage?.completion_tokens === r.usage.completion_tokens,
          'as many tokens streamed as not');
    console.log('n=2 stream: ok');

    step = 'n=2 completions';
    const cr = await client.completions.create({
        model, prompt: 'Once upon a time', max_tokens: 8, n: 2,
        best_of: 2, temperature: 1, seed: 3,
    });
    check(cr.choices.length === 2 && cr.choices[1].index === 1,
          'two choices');
    check(cr.usage.completion_tokens <= 16, 'at most 8 tokens each');
    console.log('n=2 completions: ok');
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

    await logprobs(c);
    await completionLogprobs();
    await completionEcho();
    await penalties();
    await choices();

    console.log('all: ok');
} catch (e) {
    const detail = e instanceof OpenAI.APIError
        ? `HTTP ${e.status}: ${e.message}` : (e?.message ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    process.exit(1);
}
