// The official openai npm package reading the errors nginx answers in an
// API location (fairgate_api_errors):
//
//     node t/node/errors.mjs NAME=BASEURL:CALL ...
//
// CALL is "chat" (a chat completion), "big" (one with 300 bytes of
// content) or "models" (the model list).  For each, one line: "NAME:
// CLASS status=.. type=.. code=.. message=.." when the client raised an
// APIError, "NAME: FAIL why" otherwise.  t/020-api-errors.t runs it and
// reads the lines.

import OpenAI from 'openai';

const calls = process.argv.slice(2);

if (calls.length === 0) {
    console.error('usage: node t/node/errors.mjs '
                  + 'NAME=BASEURL:chat|big|models ...');
    process.exit(2);
}

for (const arg of calls) {
    const m = /^([^=]+)=(.+):(chat|big|models)$/.exec(arg);
    if (!m) {
        console.error(`bad argument "${arg}"`);
        process.exit(2);
    }
    const [, name, baseURL, call] = m;
    const client = new OpenAI({
        baseURL, apiKey: 'sk-fairgate-errors', maxRetries: 0, timeout: 10_000,
    });

    try {
        if (call === 'models') {
            await client.models.list();
        } else {
            const n = call === 'big' ? 300 : 2;
            await client.chat.completions.create({
                model: 'm',
                messages: [{ role: 'user', content: 'x'.repeat(n) }],
            });
        }
        console.log(`${name}: FAIL no error`);
    } catch (e) {
        if (e instanceof OpenAI.APIError) {
            console.log(`${name}: ${e.constructor.name} status=${e.status} `
                        + `type=${e.type} code=${e.code} `
                        + `message=${JSON.stringify(e.error?.message)}`);
        } else {
            console.log(`${name}: FAIL ${e?.message ?? String(e)}`);
        }
    }
}
