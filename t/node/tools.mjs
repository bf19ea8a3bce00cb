// The official openai npm package's tool calling against fairgate's
// local mode:
//
//     node t/node/tools.mjs BASEURL MODEL
//
// MODEL is a model whose chat template takes tools.  Offers a tool with
// chat.completions.create() and reads the answer (text or calls), sends
// the conversation every client sends after a call (the assistant's
// tool_calls with content null, the tool's result), and streams with
// tools through the package's own accumulator (chat.completions.stream(),
// which assembles tool-call deltas).  One "NAME: ok ..." line a step; a
// failure prints "NAME: FAIL why" and exits 1.  t/113-local-tools.t runs
// it.

import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);

if (!baseURL || !model) {
    console.error('usage: node t/node/tools.mjs BASEURL MODEL');
    process.exit(2);
}

const client = new OpenAI({
    baseURL,
    apiKey: 'sk-fairgate-npm-test',
    maxRetries: 0,
    timeout: 60_000,
});

const tools = [{
    type: 'function',
    function: {
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
        },
        strict: true,
    },
}];

const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
const params = { model, tools, tool_choice: 'auto', max_tokens: 16,
                 temperature: 0 };

let step = 'start';

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

// an answer: text, or calls of the tools offered with JSON arguments
function checkMessage(c) {
    check(c.message.role === 'assistant', `role "${c.message.role}"`);
    check(['stop', 'length', 'tool_calls'].includes(c.finish_reason),
          `finish_reason "${c.finish_reason}"`);

    if (c.finish_reason === 'tool_calls') {
        for (const t of c.message.tool_calls) {
            check(t.type === 'function' && t.function.name === 'get_weather',
                  `a call of ${t.function.name}`);
            JSON.parse(t.function.arguments);
        }
        return `${c.message.tool_calls.length} calls`;
    }

    check(typeof c.message.content === 'string', 'content a string');
    return `text=${JSON.stringify(c.message.content)}`;
}

try {
    step = 'tools';
    const r = await client.chat.completions.create({ ...params,
                                                     messages: ask });
    check(r.object === 'chat.completion', `object "${r.object}"`);
    console.log(`tools: ok finish=${r.choices[0].finish_reason} `
                + checkMessage(r.choices[0]));

    step = 'after a call';
    const id = 'abc123def';
    const r2 = await client.chat.completions.create({ ...params, messages: [
        ...ask,
        { role: 'assistant', content: null, tool_calls: [
            { id, type: 'function',
              function: { name: 'get_weather',
                          arguments: JSON.stringify({ city: 'Paris' }) } },
        ] },
        { role: 'tool', tool_call_id: id, content: 'Sunny, 21 C.' },
    ] });
    console.log(`after a call: ok finish=${r2.choices[0].finish_reason} `
                + checkMessage(r2.choices[0]));

    step = 'tools stream';
    // not strict: the helper would parse the arguments, and refuses an
    // answer cut by max_tokens then
    const loose = [{ ...tools[0], function: { ...tools[0].function,
                                              strict: false } }];
    const stream = client.chat.completions.stream({ ...params, tools: loose,
                                                    messages: ask });
    let chunks = 0;
    for await (const chunk of stream) {
        check(chunk.object === 'chat.completion.chunk',
              `chunk object "${chunk.object}"`);
        chunks++;
    }
    const f = await stream.finalChatCompletion();
    const how = checkMessage(f.choices[0]);
    if (r.choices[0].finish_reason !== 'tool_calls') {
        check(f.choices[0].message.content === r.choices[0].message.content,
              'the same text, streamed');
    }
    console.log(`tools stream: ok chunks=${chunks} `
                + `finish=${f.choices[0].finish_reason} ${how}`);

    step = 'refused';
    let refused = null;
    try {
        await client.chat.completions.create({ ...params, messages: ask,
            tool_choice: { type: 'function', function: { name: 'nope' } } });
    } catch (e) {
        refused = e;
    }
    check(refused instanceof OpenAI.BadRequestError
          && refused.param === 'tool_choice',
          `an unknown tool_choice: a 400 on tool_choice (${refused})`);
    console.log('refused: ok tool_choice');
} catch (e) {
    console.log(`${step}: FAIL ${e.message}`);
    process.exit(1);
}
