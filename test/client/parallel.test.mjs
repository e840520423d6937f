// parallel.test.mjs -- several tool calls in one turn, through every
// rewriting dialect, with real SDKs. Model "mock-parallel" answers a user
// turn with one call of each of the first three declared tools (ids
// call_par0.., string arguments "v0", "v1", ...; streamed, each call's
// arguments in three fragments, or with X-Mock-Style: gemini each call whole
// in its own chunk without an index, R3), and a turn that ends with the
// answers of those calls with "results: A | B | C" in call order, or
// "unanswered: ID" when a call lost its answer. So the agent must get every
// call under its own tool name with a unique id, and the next turn's history
// (one assistant turn with several tool_calls, several tool messages) must
// reach the provider paired, in the form its strict validator accepts
// (X-Mock: strict:<provider> with X-Mock-Then: parallel).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { baseURL, API_KEY, streamAgentLoop } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/mistral', '/anthropic', '/groq'];

// Names that need no renaming on some dialects and renaming on others.
const schemas = {
  'weather.get': { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  clock_now: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] },
  'notes-add': {
    type: 'object',
    properties: { text: { type: 'string' }, tag: { type: 'string', enum: ['home', 'work'] } },
    required: ['text', 'tag'],
  },
};
const names = Object.keys(schemas);
// What the mock sends for call i (to tool i).
const expectedArgs = [{ city: 'v0' }, { tz: 'v1' }, { text: 'v2', tag: 'home' }];
const openaiTools = names.map((name) => ({ type: 'function', function: { name, parameters: schemas[name] } }));

function checkCalls(calls) {
  assert.equal(calls.length, 3, `three calls, got ${JSON.stringify(calls)}`);
  assert.deepEqual(calls.map((c) => c.function.name), names);
  const ids = calls.map((c) => c.id);
  assert.ok(ids.every((id) => typeof id === 'string' && id.length > 0), `ids: ${ids}`);
  assert.equal(new Set(ids).size, 3, `ids unique: ${ids}`);
  calls.forEach((c, i) => assert.deepEqual(JSON.parse(c.function.arguments), expectedArgs[i]));
}

// A streamed answer assembled from the raw chunks, as an agent without the
// SDK's helper would (by index; every delta must carry one, rule 10).
async function assemble(stream) {
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    for (const d of c.delta?.tool_calls ?? []) {
      assert.equal(typeof d.index, 'number', 'every tool-call delta carries an index');
      calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      const cur = calls[d.index];
      if (d.id) {
        assert.ok(!cur.id || cur.id === d.id, `index ${d.index} carries two ids: ${cur.id}, ${d.id}`);
        cur.id = d.id;
      }
      cur.function.name += d.function?.name ?? '';
      cur.function.arguments += d.function?.arguments ?? '';
    }
    finish = c.finish_reason ?? finish;
  }
  assert.ok(!calls.includes(undefined), 'indexes are dense');
  return { calls, finish };
}

const answers = (calls) => calls.map((c, i) => ({ role: 'tool', tool_call_id: c.id, content: `r${i}` }));

for (const route of routes) {
  const name = route || '/ (openai)';
  const url = () => `${root()}${route}/v1`;
  const client = () => new OpenAI({ baseURL: url(), apiKey: API_KEY, maxRetries: 0, timeout: 20000 });

  test(`openai SDK parallel calls via ${name}: whole, then all results in one turn`, async () => {
    const messages = [{ role: 'user', content: 'Three things at once' }];
    const first = await client().chat.completions.create({ model: 'mock-parallel', messages, tools: openaiTools });
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    checkCalls(first.choices[0].message.tool_calls);
    messages.push(first.choices[0].message, ...answers(first.choices[0].message.tool_calls));
    const second = await client().chat.completions.create({ model: 'mock-parallel', messages, tools: openaiTools });
    assert.equal(second.choices[0].message.content, 'results: r0 | r1 | r2');
  });

  for (const style of ['openai', 'gemini']) {
    test(`openai SDK parallel calls via ${name}: streamed (${style} chunks), then the results streamed`, async () => {
      const headers = { 'X-Mock-Style': style };
      const messages = [{ role: 'user', content: 'Three things at once' }];
      const s1 = await client().chat.completions.create(
        { model: 'mock-parallel', messages, tools: openaiTools, stream: true }, { headers });
      const { calls, finish } = await assemble(s1);
      assert.equal(finish, 'tool_calls');
      checkCalls(calls);
      messages.push({ role: 'assistant', content: null, tool_calls: calls }, ...answers(calls));
      const s2 = await client().chat.completions.create(
        { model: 'mock-parallel', messages, tools: openaiTools, stream: true }, { headers });
      let text = '';
      for await (const chunk of s2) text += chunk.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'results: r0 | r1 | r2');
    });
  }

  const aiTools = (ran) =>
    Object.fromEntries(
      names.map((n, i) => [
        n,
        tool({
          description: `tool ${i}`,
          inputSchema: jsonSchema(schemas[n]),
          execute: async (input) => {
            ran.push([n, input]);
            return `out${i}`;
          },
        }),
      ]),
    );
  const checkRan = (ran) => {
    ran.sort((a, b) => names.indexOf(a[0]) - names.indexOf(b[0]));
    assert.deepEqual(ran, names.map((n, i) => [n, expectedArgs[i]]), 'every tool ran once with its own input');
  };

  test(`AI SDK generateText with parallel calls via ${name}: every tool runs, one answer`, async () => {
    const ran = [];
    const provider = createOpenAICompatible({ baseURL: url(), name: 'toolgate', apiKey: API_KEY });
    const r = await generateText({
      model: provider('mock-parallel'),
      prompt: 'Three things at once',
      tools: aiTools(ran),
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    });
    checkRan(ran);
    assert.equal(r.steps.length, 2);
    assert.deepEqual(r.steps[0].toolCalls.map((c) => c.toolName), names);
    assert.equal(new Set(r.steps[0].toolCalls.map((c) => c.toolCallId)).size, 3);
    assert.match(r.text, /^results: .*out0.* \| .*out1.* \| .*out2/);
  });

  test(`AI SDK streamText with parallel calls via ${name}`, async () => {
    const ran = [];
    const provider = createOpenAICompatible({ baseURL: url(), name: 'toolgate', apiKey: API_KEY });
    const { text, steps } = await streamAgentLoop(streamText, stepCountIs, {
      model: provider('mock-parallel'),
      prompt: 'Three things at once',
      tools: aiTools(ran),
    });
    checkRan(ran);
    assert.equal(steps.length, 2);
    assert.match(text, /^results: .*out0.* \| .*out1.* \| .*out2/);
  });
}

// The strict provider personalities validate the second turn's history as
// the provider does (Mistral's 9-character ids and call/answer counts,
// Anthropic's id alphabet, Gemini 3's thought signatures, Groq's message
// keys), then answer as "parallel" does.
const strict = [
  ['/gemini', 'gemini', 'gemini-3-flash-preview'],
  ['/gemini', 'gemini', 'gemini-2.5-flash'],
  ['/mistral', 'mistral', 'mistral-large-latest'],
  ['/anthropic', 'anthropic', 'claude-sonnet-4-5'],
  ['/groq', 'groq', 'llama-3.3-70b-versatile'],
];
for (const [route, provider, model] of strict) {
  const headers = { 'X-Mock': `strict:${provider}`, 'X-Mock-Then': 'parallel' };
  const url = () => `${root()}${route}/v1`;

  test(`openai SDK parallel round trip accepted by strict ${provider} (${model})`, async () => {
    const client = new OpenAI({ baseURL: url(), apiKey: API_KEY, maxRetries: 0, timeout: 20000 });
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Three things at once' }];
    const first = await client.chat.completions.create({ model, messages, tools: openaiTools }, { headers });
    checkCalls(first.choices[0].message.tool_calls);
    messages.push(first.choices[0].message, ...answers(first.choices[0].message.tool_calls));
    const second = await client.chat.completions.create({ model, messages, tools: openaiTools }, { headers });
    assert.equal(second.choices[0].message.content, 'results: r0 | r1 | r2');
  });

  test(`AI SDK streamed parallel loop accepted by strict ${provider} (${model})`, async () => {
    const ran = [];
    const errors = [];
    const p = createOpenAICompatible({ baseURL: url(), name: 'toolgate', apiKey: API_KEY, headers });
    const r = streamText({
      model: p(model),
      system: 'Be brief.',
      prompt: 'Three things at once',
      tools: Object.fromEntries(
        names.map((n, i) => [n, tool({ inputSchema: jsonSchema(schemas[n]), execute: async (input) => (ran.push([n, input]), `out${i}`) })]),
      ),
      stopWhen: stepCountIs(4),
      maxRetries: 0,
      onError: ({ error }) => errors.push(error),
    });
    let text = '';
    for await (const d of r.textStream) text += d;
    assert.deepEqual(errors.map(String), []);
    assert.equal(ran.length, 3);
    assert.match(text, /^results: .*out0.* \| .*out1.* \| .*out2/);
  });
}

// Two or three calls of one function in a turn, under ids a provider got
// wrong: every call named after its function (R9, native Gemini adapters)
// or no id at all (R2). The agent must get unique ids, and its answers,
// sent under those ids, must reach the provider paired with its calls.
const one = [{ type: 'function', function: { name: 'weather.get', parameters: schemas['weather.get'] } }];
for (const route of routes) {
  for (const ids of ['name', 'empty']) {
    for (const stream of [false, true]) {
      test(`openai SDK: three calls of one tool with ${ids} ids via ${route || '/ (openai)'}${stream ? ', streamed' : ''}`, async () => {
        const client = new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 20000,
          defaultHeaders: { 'X-Mock-Calls': '3', 'X-Mock-Ids': ids, 'X-Mock-Style': 'gemini' } });
        const messages = [{ role: 'user', content: 'Paris, Rome, Oslo' }];
        const req = { model: 'mock-parallel', messages, tools: one };
        let calls;
        if (stream) {
          ({ calls } = await assemble(await client.chat.completions.create({ ...req, stream: true })));
        } else {
          calls = (await client.chat.completions.create(req)).choices[0].message.tool_calls;
        }
        assert.equal(calls.length, 3, JSON.stringify(calls));
        assert.deepEqual(calls.map((c) => c.function.name), ['weather.get', 'weather.get', 'weather.get']);
        assert.deepEqual(calls.map((c) => JSON.parse(c.function.arguments).city), ['v0', 'v1', 'v2']);
        const got = calls.map((c) => c.id);
        assert.ok(got.every((id) => typeof id === 'string' && id.length > 0), `ids: ${got}`);
        assert.equal(new Set(got).size, 3, `ids unique: ${got}`);
        messages.push({ role: 'assistant', content: null, tool_calls: calls }, ...answers(calls));
        const second = await client.chat.completions.create(req);
        assert.equal(second.choices[0].message.content, 'results: r0 | r1 | r2');
      });
    }
  }
}

// Parallel calls of strict tools with optional properties (the AI SDK's
// tool({ strict: true }), which @ai-sdk/openai sends as is): toolgate sends the strict form
// up (optional properties required and nullable), the mock writes null for
// each as a strict model does, and each call's arguments must come back
// without those nulls, also when the calls stream in fragments side by side.
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const strictSchemas = {
  'weather.get': z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
  notes_add: z.object({
    text: z.string(),
    due: z.number().optional(),
    meta: z.object({ a: z.string(), b: z.string().optional() }).optional(),
  }),
};
const strictExpected = [['weather.get', { city: 'v0' }], ['notes_add', { text: 'v1' }]];

for (const mode of ['generateText', 'streamText']) {
  test(`@ai-sdk/openai chat ${mode}: parallel strict calls lose the nulls of optional properties, then the answer`, async () => {
    const ran = [];
    const errors = [];
    const model = createOpenAI({ baseURL: baseURL(), apiKey: API_KEY }).chat('mock-parallel');
    const args = {
      model,
      prompt: 'Two things',
      tools: Object.fromEntries(
        Object.entries(strictSchemas).map(([n, s]) => [n, tool({ strict: true, inputSchema: s, execute: async (input) => (ran.push([n, input]), `ok-${n}`) })]),
      ),
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    };
    let text = '';
    if (mode === 'generateText') {
      text = (await generateText(args)).text;
    } else {
      const r = streamText({ ...args, onError: ({ error }) => errors.push(error) });
      for await (const d of r.textStream) text += d;
    }
    assert.deepEqual(errors.map(String), []);
    ran.sort((a, b) => a[0].localeCompare(b[0]));
    assert.deepEqual(ran, [...strictExpected].sort((a, b) => a[0].localeCompare(b[0])));
    assert.match(text, /^results: .*ok-weather\.get.* \| .*ok-notes_add/);
  });
}

test('openai SDK: streamed parallel strict calls with optional properties come back without nulls', async () => {
  const client = new OpenAI({ baseURL: baseURL(), apiKey: API_KEY, maxRetries: 0, timeout: 20000 });
  const tools = [
    { type: 'function', function: { name: 'weather.get', strict: true,
      parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } } },
    { type: 'function', function: { name: 'notes_add', strict: true,
      parameters: { type: 'object', properties: { text: { type: 'string' }, due: { type: 'number' },
        meta: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'] } }, required: ['text'] } } },
  ];
  const { calls } = await assemble(await client.chat.completions.create(
    { model: 'mock-parallel', messages: [{ role: 'user', content: 'Two things' }], tools, stream: true }));
  assert.deepEqual(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), strictExpected);
});
