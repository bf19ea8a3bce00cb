// Drop-in metering seen from real clients: the official openai package's
// Responses API and embeddings, and Anthropic's SDK's Messages API,
// through the gateway to an upstream that answers them as the real APIs
// do (t/lib/Fairgate/MockUpstream.pm):
//
//     node t/node/dropin-apis.mjs ROOT
//
// ROOT is the gateway's root (http://127.0.0.1:8080): OpenAI's clients
// go to ROOT/v1, Anthropic's to ROOT/k (a location with keys, its key in
// x-api-key).  Each request is tagged (X-Tag: npm-NAME), for the test to
// find its access-log line.  Prints "NAME: ok in=I out=O cached=C", the
// usage the client was given (Anthropic's input with its cache's reads and
// writes, as the gateway counts it), or "NAME: FAIL why" and exits 1.
// t/137-dropin-apis.t runs it.

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const [root] = process.argv.slice(2);

if (!root) {
    console.error('usage: node t/node/dropin-apis.mjs ROOT');
    process.exit(2);
}

const mock = { 'X-User': 'npm', 'X-Mock-Prompt-Tokens': '37',
               'X-Mock-Tokens': '5', 'X-Mock-Cached': '7',
               'X-Mock-Cache-Write': '3' };

const openai = new OpenAI({ baseURL: `${root}/v1`, apiKey: 'sk-unused',
                            maxRetries: 0, timeout: 30_000,
                            defaultHeaders: mock });

const anthropic = new Anthropic({ baseURL: `${root}/k`, apiKey: 'sk-ant-sdk',
                                  maxRetries: 0, timeout: 30_000,
                                  defaultHeaders: mock });

// a key over its tpm=10 with any request, and a key the gateway has not
const tiny = new Anthropic({ baseURL: `${root}/k`, apiKey: 'sk-ant-tiny',
                             maxRetries: 0, timeout: 30_000 });
const wrong = new Anthropic({ baseURL: `${root}/k`, apiKey: 'sk-wrong',
                              maxRetries: 0, timeout: 30_000 });

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

function tag(name) {
    return { headers: { 'X-Tag': `npm-${name}` } };
}

function say(name, inp, out, cached) {
    console.log(`${name}: ok in=${inp} out=${out} cached=${cached}`);
}

function claude(u) {
    return u.input_tokens + (u.cache_read_input_tokens ?? 0)
           + (u.cache_creation_input_tokens ?? 0);
}

try {
    step = 'responses';
    const r = await openai.responses.create(
        { model: 'm', input: 'Say something.', max_output_tokens: 10 },
        tag(step));
    check(r.output_text === 'tok '.repeat(5), `text "${r.output_text}"`);
    say(step, r.usage.input_tokens, r.usage.output_tokens,
        r.usage.input_tokens_details.cached_tokens);

    step = 'responses-stream';
    const rs = await openai.responses.create(
        { model: 'm', input: 'Say something.', max_output_tokens: 10,
          stream: true }, tag(step));
    let deltas = 0;
    let done = null;
    for await (const ev of rs) {
        if (ev.type === 'response.output_text.delta') {
            deltas++;
        } else if (ev.type === 'response.completed') {
            done = ev.response;
        }
    }
    check(deltas === 5 && done, `${deltas} deltas, completed ${!!done}`);
    say(step, done.usage.input_tokens, done.usage.output_tokens,
        done.usage.input_tokens_details.cached_tokens);

    step = 'embeddings';
    const e = await openai.embeddings.create(
        { model: 'm', input: ['one two', 'three'] }, tag(step));
    check(e.data.length === 2 && e.data[0].embedding.length === 3
          && e.data[0].embedding[1] === -0.25,
          'two vectors, decoded from base64');
    say(step, e.usage.prompt_tokens, 0, '-');

    step = 'messages';
    const m = await anthropic.messages.create(
        { model: 'm', max_tokens: 10,
          system: [{ type: 'text', text: 'Be brief.' }],
          messages: [{ role: 'user', content: 'Hi.' }] }, tag(step));
    check(m.content[0].text === 'tok '.repeat(5),
          `text "${m.content[0].text}"`);
    say(step, claude(m.usage), m.usage.output_tokens,
        m.usage.cache_read_input_tokens);

    step = 'messages-stream';
    const ms = anthropic.messages.stream(
        { model: 'm', max_tokens: 10,
          messages: [{ role: 'user', content: 'Hi.' }] }, tag(step));
    let text = '';
    ms.on('text', (t) => { text += t; });
    const fm = await ms.finalMessage();
    check(text === 'tok '.repeat(5), `streamed text "${text}"`);
    say(step, claude(fm.usage), fm.usage.output_tokens,
        fm.usage.cache_read_input_tokens);

    step = 'messages-429';
    try {
        await tiny.messages.create(
            { model: 'm', max_tokens: 100,
              messages: [{ role: 'user', content: 'Hi.' }] },
            tag(step));
        throw new Error('no error');
    } catch (err) {
        check(err instanceof Anthropic.RateLimitError,
              `a RateLimitError, not ${err.constructor.name}: ${err.message}`);
        check(err.error?.error?.type === 'rate_limit_error',
              `error.type ${err.error?.error?.type}`);
        console.log(`${step}: ok ${err.status} ${err.error.error.type}`);
    }

    step = 'messages-401';
    try {
        await wrong.messages.create(
            { model: 'm', max_tokens: 10,
              messages: [{ role: 'user', content: 'Hi.' }] },
            tag(step));
        throw new Error('no error');
    } catch (err) {
        check(err instanceof Anthropic.AuthenticationError,
              `an AuthenticationError, not ${err.constructor.name}`);
        console.log(`${step}: ok ${err.status} ${err.error.error.type}`);
    }
} catch (err) {
    console.log(`${step}: FAIL ${err.message}`);
    process.exit(1);
}
