// responses.test.mjs -- the Responses API (/v1/responses) bridged to chat
// completions, with the real clients that speak it: the openai SDK's
// client.responses (create and stream) and the AI SDK's OpenAI provider,
// whose default model is the Responses one. Every route bridges by default
// (the root one is openai); /rbridge is an openai route that says
// `responses = bridge`, /rpass one that says `responses = pass`. Model "mock-agent" (the mock) ends
// its loop only when a tool result answers its call by id, so the
// function_call / function_call_output pairing must survive the way to chat
// and back, and renamed tools (a dotted name) must come back as the agent's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { generateText, streamText, generateObject, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { baseURL, API_KEY, streamAgentLoop } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/mistral', '/anthropic', '/groq', '/rbridge'];
const city = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const tools = [{ type: 'function', name: 'weather.get', description: 'Weather', parameters: city, strict: false }];

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  return { path: last.path, body: typeof last.body === 'string' ? JSON.parse(last.body) : last.body };
}

for (const route of routes) {
  const url = `${root()}${route}/v1`;

  test(`openai SDK responses.create loop via ${route || "/"}: function_call, output, answer`, async () => {
    const client = new OpenAI({ baseURL: url, apiKey: API_KEY, maxRetries: 0 });
    const input = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.responses.create({ model: 'mock-agent', input, tools, instructions: 'Be brief.' });
    assert.equal(first.object, 'response');
    assert.equal(first.status, 'completed');
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    assert.equal(call.name, 'weather.get');
    assert.ok(call.call_id);
    const up = await lastUpstream();
    assert.equal(up.path, '/v1/chat/completions');
    assert.equal(up.body.messages[0].role === 'system' || up.body.messages[0].role === 'user', true);
    input.push(...first.output);
    input.push({ type: 'function_call_output', call_id: call.call_id, output: 'sunny' });
    const second = await client.responses.create({ model: 'mock-agent', input, tools });
    assert.equal(second.output_text, 'result: sunny');
    assert.ok(second.usage.input_tokens >= 0 && second.usage.output_tokens >= 0);
  });

  test(`openai SDK responses.stream via ${route || "/"}: events in order, final response`, async () => {
    const client = new OpenAI({ baseURL: url, apiKey: API_KEY, maxRetries: 0 });
    const stream = client.responses.stream({ model: 'mock-agent', input: 'Weather in Paris?', tools });
    const types = [];
    let last = -1;
    for await (const ev of stream) {
      types.push(ev.type);
      assert.ok(ev.sequence_number > last, `sequence_number grows: ${ev.sequence_number} after ${last}`);
      last = ev.sequence_number;
    }
    const final = await stream.finalResponse();
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.ok(types.includes('response.function_call_arguments.done'));
    const call = final.output.find((o) => o.type === 'function_call');
    assert.equal(call.name, 'weather.get');
    assert.deepEqual(JSON.parse(call.arguments), {});
  });

  test(`AI SDK OpenAI Responses model, agent loop via ${route || "/"}`, async () => {
    const provider = createOpenAI({ baseURL: url, apiKey: API_KEY });
    const seen = [];
    const r = await generateText({
      model: provider.responses('mock-agent'),
      prompt: 'Weather in Paris?',
      tools: {
        'weather.get': tool({
          description: 'Weather for a city',
          inputSchema: jsonSchema(city),
          execute: async (input) => {
            seen.push(input);
            return 'sunny';
          },
        }),
      },
      providerOptions: { openai: { store: false } },
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    });
    assert.equal(seen.length, 1, 'the tool ran once');
    assert.equal(r.steps.length, 2);
    assert.equal(r.steps[0].toolCalls[0].toolName, 'weather.get');
    assert.match(r.text, /^result: .*sunny/);
  });

  test(`AI SDK OpenAI Responses model, streamed agent loop via ${route || "/"}`, async () => {
    const provider = createOpenAI({ baseURL: url, apiKey: API_KEY });
    const { text, steps } = await streamAgentLoop(streamText, stepCountIs, {
      model: provider.responses('mock-agent'),
      prompt: 'Weather in Paris?',
      tools: { 'weather.get': tool({ inputSchema: jsonSchema(city), execute: async () => 'sunny' }) },
      providerOptions: { openai: { store: false } },
    });
    assert.equal(steps.length, 2);
    assert.match(text, /^result: .*sunny/);
  });
}

for (const route of ['/gemini', '/rbridge']) {
  test(`AI SDK generateObject over the Responses API via ${route || "/"}: text.format becomes response_format`, async () => {
    const provider = createOpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY });
    const r = await generateObject({
      model: provider.responses('mock-structured'),
      schema: z.object({ name: z.string(), age: z.number().int().optional() }),
      prompt: 'Who?',
      providerOptions: { openai: { store: false } },
      maxRetries: 0,
    });
    assert.equal(r.object.name, 'x');
    const up = await lastUpstream();
    assert.equal(up.body.response_format.type, 'json_schema');
    assert.deepEqual(Object.keys(up.body.response_format.json_schema.schema.properties).sort(), ['age', 'name']);
    if (route === '/rbridge') {
      // openai strict: every property required upstream, the null the model
      // writes for the optional one removed on the way back (structured.test.mjs)
      assert.deepEqual([...up.body.response_format.json_schema.schema.required].sort(), ['age', 'name']);
      assert.deepEqual(r.object, { name: 'x' });
    }
  });
}

test('a previous_response_id toolgate does not hold gets OpenAI\'s 400 naming it', async () => {
  const client = new OpenAI({ baseURL: `${root()}/mistral/v1`, apiKey: API_KEY, maxRetries: 0 });
  await assert.rejects(
    client.responses.create({ model: 'mock-agent', input: 'hi', previous_response_id: 'resp_123' }),
    (e) => e.status === 400 && e.param === 'previous_response_id' && e.code === 'previous_response_not_found',
  );
});

for (const route of ['', '/gemini', '/anthropic']) {
  test(`openai SDK loop with previous_response_id via ${route || '/'}: whole, then streamed`, async () => {
    const client = new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY, maxRetries: 0 });
    const first = await client.responses.create({ model: 'mock-agent', input: 'Weather in Paris?', tools, instructions: 'Be brief.' });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    // only the tool's output: the call it answers comes from the stored chain
    const second = await client.responses.create({
      model: 'mock-agent', previous_response_id: first.id, tools,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
    });
    assert.equal(second.previous_response_id, first.id);
    assert.equal(second.output_text, 'result: sunny');
    let up = await lastUpstream();
    const roles = up.body.messages.map((m) => m.role);
    assert.deepEqual(roles.filter((r) => r !== 'system'), ['user', 'assistant', 'tool']);
    assert.ok(!up.body.messages.some((m) => m.content === 'Be brief.'), 'instructions are not carried over');
    // a third turn continues the chain of two, streamed
    const stream = client.responses.stream({ model: 'mock-agent', previous_response_id: second.id, input: 'Thanks!' });
    const final = await stream.finalResponse();
    assert.equal(final.status, 'completed');
    up = await lastUpstream();
    assert.deepEqual(up.body.messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'user']);
    // the streamed one is a link of the chain too
    const fourth = await client.responses.create({ model: 'mock-agent', previous_response_id: final.id, input: 'Bye' });
    assert.equal(fourth.status, 'completed');
    up = await lastUpstream();
    // the chain's four turns, then this one (the streamed answer's call,
    // which nobody answered, gets hygiene's placeholder result)
    const msgs = up.body.messages;
    assert.deepEqual(msgs.slice(0, 6).map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant'], JSON.stringify(msgs));
    assert.equal(msgs[4].content, 'Thanks!');
    assert.deepEqual(msgs.at(-1), { role: 'user', content: 'Bye' });
    // another client (another key) cannot continue it
    const other = new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: `${API_KEY}-other`, maxRetries: 0 });
    await assert.rejects(
      other.responses.create({ model: 'mock-agent', previous_response_id: first.id, input: 'x' }),
      (e) => e.status === 400 && e.param === 'previous_response_id',
    );
    // store: false leaves nothing to continue
    const unstored = await client.responses.create({ model: 'mock-agent', input: 'hi', store: false });
    await assert.rejects(
      client.responses.create({ model: 'mock-agent', previous_response_id: unstored.id, input: 'x' }),
      (e) => e.status === 400 && e.code === 'previous_response_not_found',
    );
  });
}

// the stored-response endpoints through the SDK's own helpers (retrieve,
// its stream, inputItems' cursor pages, delete, compact), answered from
// toolgate's store on a bridged route (proxy/stored.c)
for (const route of ['', '/gemini']) {
  test(`openai SDK retrieve, inputItems, delete and compact via ${route || '/'}`, async () => {
    const client = new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY, maxRetries: 0 });
    const input = ['one', 'two', 'three'].map((t) => ({ role: 'user', content: t }));
    const made = await client.responses.create({ model: 'mock-agent', input });
    const got = await client.responses.retrieve(made.id);
    assert.equal(got.id, made.id);
    assert.deepEqual(got.output, made.output);
    assert.equal(got.output_text, made.output_text);
    const events = [];
    for await (const ev of await client.responses.retrieve(made.id, { stream: true })) events.push(ev.type);
    assert.equal(events[0], 'response.created');
    assert.equal(events.at(-1), 'response.completed');
    // limit 1: the SDK follows has_more with after=<last id>, page by page
    const texts = [];
    for await (const item of client.responses.inputItems.list(made.id, { limit: 1, order: 'asc' })) {
      texts.push(item.content[0].text);
    }
    assert.deepEqual(texts, ['one', 'two', 'three']);
    const compacted = await client.responses.compact({ model: 'mock-agent', previous_response_id: made.id });
    assert.equal(compacted.object, 'response.compaction');
    assert.equal(compacted.output.at(-1).type, 'compaction');
    await client.responses.delete(made.id);
    await assert.rejects(client.responses.retrieve(made.id), (e) => e.status === 404);
  });
}

test('a tool OpenAI hosts is left out and said so in X-Toolgate-Dropped', async () => {
  const client = new OpenAI({ baseURL: `${root()}/gemini/v1`, apiKey: API_KEY, maxRetries: 0 });
  const { data, response } = await client.responses
    .create({
      model: 'mock-default',
      input: 'hi',
      tools: [{ type: 'web_search', external_web_access: false }, { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }],
    })
    .withResponse();
  assert.equal(data.status, 'completed');
  assert.equal(response.headers.get('x-toolgate-dropped'), 'tools web_search');
  const up = await lastUpstream();
  assert.deepEqual(up.body.tools.map((t) => t.function.name), ['f']);
});

test('a route with responses = pass passes /v1/responses through, less the agent\'s private keys', async () => {
  const body = {
    model: 'mock-default',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi', _ui: 1 }], _ts: 2 }],
    tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: { _id: { type: 'string' } } } }],
    metadata: { _k: 'v' },
    _mine: 1,
  };
  await fetch(`${root()}/rpass/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(body),
  });
  const up = await lastUpstream();
  assert.equal(up.path, '/v1/responses');
  delete body._mine;
  delete body.input[0]._ts;
  delete body.input[0].content[0]._ui;
  assert.deepEqual(up.body, body, 'only the markers went; a schema property and metadata named _ stay');
});

// Lazy discovery behind the bridge: 100 real tools in Responses shape go
// through a discovery route; the mock's scripted model searches, reads a
// schema and calls call_tool, rounds toolgate answers itself, and the agent
// gets one function_call of its own tool, never a meta-tool, whole and
// streamed.
const shared = process.env.TG_SHARED || path.resolve(process.cwd(), '../shared');
const big = JSON.parse(fs.readFileSync(path.join(shared, 'corpus/requests/big-100.json'), 'utf8'));
const flatTools = big.tools.map((t) => ({ type: 'function', ...t.function }));
const agentNames = new Set(flatTools.map((t) => t.name));

for (const prefix of ['/disc-gemini', '/disc-mistral']) {
  test(`Responses API with lazy discovery via ${prefix}: one call of the agent's own tool`, async () => {
    const client = new OpenAI({ baseURL: `${root()}${prefix}/v1`, apiKey: API_KEY, maxRetries: 0 });
    const headers = { 'X-Mock': 'discovery' };
    const r = await client.responses.create({ model: 'any', input: 'read the file notes.txt', tools: flatTools }, { headers });
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1, JSON.stringify(r.output));
    assert.ok(agentNames.has(calls[0].name), `${calls[0].name} is one of the agent's tools`);
    const stream = client.responses.stream({ model: 'any', input: 'read the file notes.txt', tools: flatTools }, { headers });
    const final = await stream.finalResponse();
    const scalls = final.output.filter((o) => o.type === 'function_call');
    assert.deepEqual(scalls.map((c) => c.name), calls.map((c) => c.name));
    assert.equal(final.status, 'completed');
  });
}

// The AI SDK with its default store (true) thinks the provider keeps the
// turns it answered: on the next turn it sends the model's earlier text
// and reasoning back as item_reference. toolgate keeps the items of its
// bridged answers (itemstore.h) and gives them back to the history. The
// mock says a sentence beside its call (X-Mock-Say) and answers "lost: ..."
// unless the next turn's history has that sentence with the call.
for (const route of ['/gemini', '/mistral', '/anthropic']) {
  const url = `${root()}${route}/v1`;
  const headers = { 'X-Mock-Say': 'Let me look that up.', 'X-Mock-Think': 'The user wants weather.' };
  test(`AI SDK Responses model with store on (item_reference) via ${route || "/"}`, async () => {
    const provider = createOpenAI({ baseURL: url, apiKey: API_KEY });
    const r = await generateText({
      model: provider.responses('mock-agent'),
      prompt: 'Weather in Paris?',
      headers,
      tools: { 'weather.get': tool({ inputSchema: jsonSchema(city), execute: async () => 'sunny' }) },
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    });
    assert.equal(r.steps.length, 2);
    assert.equal(r.steps[0].text, 'Let me look that up.');
    assert.equal(r.text, 'result: sunny');
  });

  test(`AI SDK Responses model with store on, streamed, via ${route || "/"}`, async () => {
    const provider = createOpenAI({ baseURL: url, apiKey: API_KEY });
    const { text, steps } = await streamAgentLoop(streamText, stepCountIs, {
      model: provider.responses('mock-agent'),
      prompt: 'Weather in Paris?',
      headers,
      tools: { 'weather.get': tool({ inputSchema: jsonSchema(city), execute: async () => 'sunny' }) },
    });
    assert.equal(steps.length, 2);
    assert.match(text, /result: sunny$/);
  });
}

test('an item_reference toolgate does not hold is a 400 naming it and saying what to do', async () => {
  const client = new OpenAI({ baseURL: `${root()}/gemini/v1`, apiKey: API_KEY, maxRetries: 0 });
  await assert.rejects(
    client.responses.create({
      model: 'mock-agent',
      input: [{ role: 'user', content: 'hi' }, { type: 'item_reference', id: 'msg_never_seen' }],
    }),
    (e) => e.status === 400 && e.param === 'input[1]' && /store: false/.test(e.message),
  );
});
