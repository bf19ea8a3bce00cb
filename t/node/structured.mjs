// Structured output of fairgate's local mode through real clients:
//
//     node t/node/structured.mjs BASEURL [MODEL]
//
// With the openai package: chat.completions.create() with response_format
// json_schema (a raw schema, as zodResponseFormat() makes it), not
// streamed and streamed, and json_object; a schema fairgate does not take,
// read as an APIError 400 naming the keyword.  With the AI SDK:
// generateObject() on createOpenAI({ baseURL })(model) (the Responses API,
// text.format json_schema) and on .chat(model) (chat completions,
// response_format).  Sampled with seeds at temperature 1 on a model that
// knows no JSON: the grammar alone makes each answer parse and validate.
// Prints one "NAME: ok ..." line a step; a failure prints "NAME: FAIL why"
// and exits 1.  t/128-structured-npm.t runs it.

import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, jsonSchema } from 'ai';

const [baseURL, model = 'stories260K'] = process.argv.slice(2);

if (!baseURL) {
    console.error('usage: node t/node/structured.mjs BASEURL [MODEL]');
    process.exit(2);
}

const apiKey = 'sk-fairgate-npm-test';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

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

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

// the schema above, checked by hand
function valid(v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v)
        && Object.keys(v).every((k) => k in schema.properties)
        && typeof v.name === 'string' && [...v.name].length <= 12
        && Number.isInteger(v.age) && v.age >= 0 && v.age <= 99
        && (v.pet === 'cat' || v.pet === 'dog');
}

const chatParams = {
    model,
    messages: [{ role: 'user', content: 'Tell me about a child.' }],
    max_tokens: 120,
    temperature: 1,
    response_format: {
        type: 'json_schema',
        json_schema: { name: 'child', strict: true, schema },
    },
};

async function openaiSteps() {
    step = 'json_schema';
    let ended = 0;
    for (let seed = 1; seed <= 4; seed++) {
        const r = await client.chat.completions.create({ ...chatParams, seed });
        const c = r.choices[0];
        if (c.finish_reason !== 'stop') {
            continue;
        }
        ended++;
        const v = JSON.parse(c.message.content);
        check(valid(v), `seed ${seed}: ${c.message.content} meets the schema`);
    }
    check(ended >= 3, `${ended} of 4 ended by the grammar`);
    console.log(`json_schema: ok ended=${ended}`);

    step = 'json_schema stream';
    const whole = await client.chat.completions.create({ ...chatParams,
                                                         seed: 2 });
    const stream = await client.chat.completions.create({
        ...chatParams, seed: 2, stream: true });
    let text = '';
    for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
    }
    check(text === whole.choices[0].message.content,
          `streamed ${text} is the same as not`);
    console.log(`json_schema stream: ok text=${text}`);

    step = 'json_object';
    const o = await client.chat.completions.create({
        ...chatParams, seed: 5, response_format: { type: 'json_object' } });
    if (o.choices[0].finish_reason === 'stop') {
        const v = JSON.parse(o.choices[0].message.content);
        check(v !== null && typeof v === 'object' && !Array.isArray(v),
              'an object');
    }
    console.log(`json_object: ok finish=${o.choices[0].finish_reason}`);

    step = 'refused';
    try {
        await client.chat.completions.create({ ...chatParams,
            response_format: { type: 'json_schema', json_schema: {
                name: 'x', schema: { type: 'object', properties: {
                    n: { type: 'number', multipleOf: 5 } } } } } });
        check(false, 'multipleOf was not refused');
    } catch (e) {
        check(e instanceof OpenAI.APIError && e.status === 400
              && /multipleOf/.test(e.message),
              `a 400 naming multipleOf, got ${e}`);
    }
    console.log('refused: ok');
}

async function aiSdkSteps() {
    const provider = createOpenAI({ baseURL, apiKey });
    const opts = {
        schema: jsonSchema(schema), schemaName: 'child',
        prompt: 'Tell me about a child.', maxOutputTokens: 120,
        temperature: 1, seed: 3, maxRetries: 0,
    };

    step = 'ai generateObject responses';
    const r = await generateObject({ ...opts, model: provider(model) });
    check(valid(r.object), `object ${JSON.stringify(r.object)}`);
    console.log(`ai generateObject responses: ok object=`
                + JSON.stringify(r.object));

    step = 'ai generateObject chat';
    const c = await generateObject({ ...opts, model: provider.chat(model) });
    check(valid(c.object), `object ${JSON.stringify(c.object)}`);
    console.log(`ai generateObject chat: ok object=`
                + JSON.stringify(c.object));
}

try {
    await openaiSteps();
    await aiSdkSteps();
    console.log('all: ok');
} catch (e) {
    const detail = e instanceof OpenAI.APIError
        ? `HTTP ${e.status}: ${e.message}` : (e?.message ?? String(e));
    console.log(`${step}: FAIL ${detail}`);
    process.exit(1);
}
