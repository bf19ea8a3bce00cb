// Embeddings through fairgate's local mode with real clients:
//
//     node t/node/embed.mjs BASEURL [MODEL]
//
// The official openai package's embeddings.create() (which asks for base64
// unless told otherwise, and decodes it) and the AI SDK's embed() and
// embedMany() (ai, @ai-sdk/openai).  Prints one "NAME: ok ..." line a
// step; a failure prints "NAME: FAIL why" and exits 1.  t/118 runs it.

import OpenAI from 'openai';
import { embed, embedMany } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const [baseURL, model = 'stories260K'] = process.argv.slice(2);

if (!baseURL) {
    console.error('usage: node t/node/embed.mjs BASEURL [MODEL]');
    process.exit(2);
}

const apiKey = 'sk-fairgate-npm-test';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const texts = ['Once upon a time', 'The cat sat on the mat.', 'Lily',
               'A big red ball rolled down the hill.'];

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

function norm(v) {
    return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function maxdiff(a, b) {
    check(a.length === b.length, `lengths ${a.length} and ${b.length}`);
    return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
}

function unit(v, what) {
    check(Array.isArray(v) && v.length > 0, `${what}: a vector`);
    check(Math.abs(norm(v) - 1) < 1e-5, `${what}: unit length, ${norm(v)}`);
}

try {
    step = 'openai one';
    const one = await client.embeddings.create({ model, input: texts[0] });
    check(one.object === 'list' && one.data.length === 1, 'one item');
    const width = one.data[0].embedding.length;
    unit(one.data[0].embedding, 'openai one');
    check(one.usage.prompt_tokens > 0
          && one.usage.total_tokens === one.usage.prompt_tokens, 'usage');
    console.log(`openai one: ok width=${width} `
                + `tokens=${one.usage.prompt_tokens}`);

    step = 'openai many';
    const b64 = await client.embeddings.create({ model, input: texts });
    const flt = await client.embeddings.create({ model, input: texts,
                                                 encoding_format: 'float' });
    check(b64.data.length === texts.length, `${b64.data.length} items`);
    let worst = 0;
    b64.data.forEach((d, i) => {
        check(d.index === i, `item ${i} has index ${d.index}`);
        unit(d.embedding, `item ${i}`);
        worst = Math.max(worst, maxdiff(d.embedding, flt.data[i].embedding));
    });
    check(worst < 1e-5, `base64 (the default) and float agree: ${worst}`);
    check(maxdiff(b64.data[0].embedding, one.data[0].embedding) < 1e-5,
          'the first input as alone');
    console.log(`openai many: ok items=${b64.data.length} `
                + `base64-float=${worst.toExponential(1)}`);

    step = 'openai dimensions';
    try {
        await client.embeddings.create({ model, input: texts[0],
                                         dimensions: width + 1 });
        check(false, 'dimensions other than the width: no error');
    } catch (e) {
        check(e instanceof OpenAI.APIError && e.status === 400
              && e.param === 'dimensions', `an APIError 400: ${e.message}`);
    }
    console.log('openai dimensions: ok 400 param=dimensions');

    step = 'ai embed';
    const provider = createOpenAI({ baseURL, apiKey });
    const e1 = await embed({ model: provider.embedding(model),
                             value: texts[0], maxRetries: 0 });
    check(e1.embedding.length === width, `width ${e1.embedding.length}`);
    check(maxdiff(e1.embedding, one.data[0].embedding) < 1e-5,
          'the openai package\'s vector');
    check(e1.usage.tokens === one.usage.prompt_tokens,
          `usage.tokens ${e1.usage.tokens}`);
    console.log(`ai embed: ok width=${e1.embedding.length} `
                + `tokens=${e1.usage.tokens}`);

    step = 'ai embedMany';
    const em = await embedMany({ model: provider.embedding(model),
                                 values: texts, maxRetries: 0 });
    check(em.embeddings.length === texts.length,
          `${em.embeddings.length} embeddings`);
    worst = 0;
    em.embeddings.forEach((v, i) => {
        worst = Math.max(worst, maxdiff(v, flt.data[i].embedding));
    });
    check(worst < 1e-5, `each as the openai package's: ${worst}`);
    console.log(`ai embedMany: ok embeddings=${em.embeddings.length} `
                + `tokens=${em.usage.tokens}`);

    console.log('all: ok');
} catch (e) {
    const detail = e instanceof OpenAI.APIError
        ? `HTTP ${e.status}: ${e.message}` : (e?.message ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    process.exit(1);
}
