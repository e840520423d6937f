// messages.test.mjs -- Anthropic's Messages API (/v1/messages) bridged to
// chat completions, with the real clients that speak it: the Anthropic SDK
// (messages.create, messages.stream) and the AI SDK's Anthropic provider.
// Every route bridges by default but anthropic and passthrough ones (the
// root route is openai); /anthropic passes /v1/messages through, /abridge
// is an anthropic route that says `messages = bridge`. Model "mock-agent"
// (the mock) calls the first declared tool, then ends its loop only when a
// tool result answers its call by id, so tool_use / tool_result pairing
// must survive the way to chat and back, and a renamed tool (a dotted name
// on Gemini) must come back as the agent's. The Anthropic SDK's baseURL has
// no /v1 (it appends /v1/messages); the AI SDK's has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { baseURL, API_KEY, streamAgentLoop } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/mistral', '/groq', '/abridge'];
const city = { type: 'object', properties: { city: { type: 'string' } } };
const tools = [{ name: 'weather.get', description: 'Weather for a city', input_schema: city }];

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  const headers = Object.fromEntries(Object.entries(last.headers || {}).map(([k, v]) => [k.toLowerCase(), v]));
  return { path: last.path, headers, body: typeof last.body === 'string' ? JSON.parse(last.body) : last.body };
}

const client = (route, headers = {}) =>
  new Anthropic({ baseURL: `${root()}${route}`, apiKey: API_KEY, maxRetries: 0, defaultHeaders: headers });

for (const route of routes) {
  test(`Anthropic SDK messages.create loop via ${route || '/'}: tool_use, tool_result, answer`, async () => {
    const c = client(route, { 'X-Mock-Say': 'Let me check.' });
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const system = [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }];
    const first = await c.messages.create({ model: 'mock-agent', max_tokens: 256, system, messages, tools });
    assert.equal(first.type, 'message');
    assert.equal(first.role, 'assistant');
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(first.content.map((b) => b.type), ['text', 'tool_use']);
    assert.equal(first.content[0].text, 'Let me check.');
    const call = first.content[1];
    assert.equal(call.name, 'weather.get');
    assert.deepEqual(call.input, {});
    assert.ok(call.id);
    const up = await lastUpstream();
    assert.equal(up.path, '/v1/chat/completions');
    assert.equal(up.body.messages[0].role, 'system');
    assert.equal(up.body.max_tokens, 256);
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] });
    const second = await c.messages.create({ model: 'mock-agent', max_tokens: 256, system, messages, tools });
    assert.equal(second.stop_reason, 'end_turn');
    assert.deepEqual(second.content, [{ type: 'text', text: 'result: sunny', citations: null }]);  // TextBlock's citations: required, null
    assert.ok(second.usage.input_tokens >= 0 && second.usage.output_tokens >= 0);
  });

  test(`Anthropic SDK messages.stream loop via ${route || '/'}: events in order, finalMessage`, async () => {
    const c = client(route, { 'X-Mock-Say': 'Checking.' });
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const stream = c.messages.stream({ model: 'mock-agent', max_tokens: 256, messages, tools });
    const types = [];
    for await (const ev of stream) types.push(ev.type);
    const first = await stream.finalMessage();
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-1), 'message_stop');
    assert.ok(types.includes('content_block_stop'));
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(first.content.map((b) => b.type), ['text', 'tool_use']);
    assert.equal(first.content[0].text, 'Checking.');
    const call = first.content[1];
    assert.equal(call.name, 'weather.get');
    assert.deepEqual(call.input, {});
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'sunny' }] }] });
    const second = await c.messages.stream({ model: 'mock-agent', max_tokens: 256, messages, tools }).finalMessage();
    assert.equal(second.stop_reason, 'end_turn');
    assert.equal(second.content[0].text, 'result: sunny');
    assert.equal(second.model, 'mock-agent');
  });

  test(`AI SDK Anthropic provider, agent loop via ${route || '/'}`, async () => {
    const anthropic = createAnthropic({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY });
    const seen = [];
    const r = await generateText({
      model: anthropic('mock-agent'),
      maxOutputTokens: 256,
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
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    });
    assert.equal(seen.length, 1, 'the tool ran once');
    assert.equal(r.steps.length, 2);
    assert.equal(r.steps[0].toolCalls[0].toolName, 'weather.get');
    assert.equal(r.steps[0].finishReason, 'tool-calls');
    assert.match(r.text, /^result: .*sunny/);
  });

  test(`AI SDK Anthropic provider, streamed agent loop via ${route || '/'}`, async () => {
    const anthropic = createAnthropic({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY });
    const { text, steps } = await streamAgentLoop(streamText, stepCountIs, {
      model: anthropic('mock-agent'),
      maxOutputTokens: 256,
      prompt: 'Weather in Paris?',
      tools: { 'weather.get': tool({ inputSchema: jsonSchema(city), execute: async () => 'sunny' }) },
    });
    assert.equal(steps.length, 2);
    assert.match(text, /^result: .*sunny/);
  });
}

test('the Messages request becomes the chat request the route rules see', async () => {
  const c = client('/gemini');
  await c.messages.create({
    model: 'mock-agent',
    max_tokens: 100,
    stop_sequences: ['END'],
    temperature: 0.2,
    metadata: { user_id: 'u-7' },
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    tools,
  });
  const up = await lastUpstream();
  assert.equal(up.path, '/v1/chat/completions');
  assert.deepEqual(up.body.messages, [{ role: 'user', content: 'Hi' }]);
  assert.equal(up.body.max_tokens, 100);
  assert.deepEqual(up.body.stop, ['END']);
  assert.equal(up.body.tool_choice, 'required');
  assert.equal(up.body.tools[0].type, 'function');
});

test('a server tool is left out, said in X-Toolgate-Dropped; the custom tools still reach the model', async () => {
  const c = client('/mistral');
  const { data, response } = await c.messages
    .create({
      model: 'mock-default',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Search' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }, ...tools],
    })
    .withResponse();
  assert.equal(data.type, 'message');
  assert.equal(response.headers.get('x-toolgate-dropped'), 'tools web_search_20250305');
  const up = await lastUpstream();
  assert.equal(up.body.tools.length, 1);  /* weather.get, in Mistral's spelling */
  assert.ok(!JSON.stringify(up.body.tools).includes('web_search'));
});

test('a system message inside messages (Claude Code sends one) is carried as a system turn', async () => {
  const ask = (route) =>
    client(route).messages.create({
      model: 'mock-default',
      max_tokens: 100,
      system: 'You are an agent.',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'system', content: 'Agent types: general.' },
      ],
    });
  assert.equal((await ask('')).type, 'message');
  let up = await lastUpstream();
  assert.deepEqual(up.body.messages.map((m) => m.role), ['system', 'user', 'system']);
  /* where the dialect wants system turns first (system_first), it joins the first */
  await ask('/mistral');
  up = await lastUpstream();
  assert.deepEqual(up.body.messages, [
    { role: 'system', content: 'You are an agent.\n\nAgent types: general.' },
    { role: 'user', content: 'Hi' },
  ]);
});

test('AI SDK Anthropic provider: a PDF file part is answered (was a 400), said as dropped when unreadable', async () => {
  const anthropic = createAnthropic({ baseURL: `${root()}/groq/v1`, apiKey: API_KEY });
  const r = await generateText({
    model: anthropic('mock-agent'),
    maxOutputTokens: 256,
    messages: [{ role: 'user', content: [{ type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf' }] }],
    maxRetries: 0,
  });
  assert.equal(r.response.headers['x-toolgate-dropped'], 'content document:unreadable-pdf');
});

test('AI SDK Anthropic provider shows a refusal\'s message', async () => {
  const anthropic = createAnthropic({
    baseURL: `${root()}/groq/v1`,
    apiKey: API_KEY,
    headers: { 'X-Mock-Status': '400' },
  });
  await assert.rejects(
    generateText({
      model: anthropic('mock-status'),
      maxOutputTokens: 256,
      messages: [{ role: 'user', content: 'x' }],
      maxRetries: 0,
    }),
    (e) => {
      assert.equal(e.statusCode, 400);
      assert.match(e.message, /mock failure/);
      return true;
    },
  );
});

test('a provider\'s error reaches the Anthropic SDK in Anthropic\'s shape, status kept', async () => {
  const c = client('/mistral', { 'X-Mock-Status': '429' });
  await assert.rejects(c.messages.create({ model: 'mock-status', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }), (e) => {
    assert.ok(e instanceof Anthropic.RateLimitError, String(e));
    assert.equal(e.error.error.type, 'rate_limit_error');
    assert.equal(e.error.error.message, 'mock failure');
    return true;
  });
});

test('a body toolgate refuses: a 400 naming the field, in Anthropic\'s shape', async () => {
  const c = client('');
  await assert.rejects(
    c.messages.create({ model: 'mock-agent', max_tokens: 10, messages: [{ role: 'tool', content: 'x' }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, String(e));
      assert.match(e.error.error.message, /^messages\[0\]\.role: /);
      return true;
    },
  );
});

test('count_tokens on a bridged route: an estimate, said as such', async () => {
  const c = client('/gemini');
  const { data, response } = await c.messages
    .countTokens({ model: 'mock-agent', messages: [{ role: 'user', content: 'x'.repeat(700) }] })
    .withResponse();
  assert.equal(response.headers.get('x-toolgate-estimate'), 'input_tokens');
  assert.equal(data.input_tokens, 204); // 700 characters at 3.5 a token, and 4 of framing
});

test('an anthropic route passes /v1/messages through, without the agent\'s private keys', async () => {
  const c = client('/anthropic');
  const body = {
    model: 'mock-agent',
    max_tokens: 10,
    _trace: 'agent-private',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'x', _note: 1 }], _id: 'm1' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'a', input: { _keep: 'the model said it' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
    ],
    tools: [{ name: 'a', input_schema: { type: 'object', properties: { _keep: { type: 'string' } } } }],
  };
  // the mock has no Messages API: its 404 (OpenAI-shaped) reaches the SDK in Anthropic's shape
  await assert.rejects(c.messages.create(body), (e) => {
    assert.ok(e instanceof Anthropic.NotFoundError, String(e));
    assert.match(e.error.error.message, /mock: no such endpoint/);
    return true;
  });
  const up = await lastUpstream();
  assert.equal(up.path, '/v1/messages');
  assert.equal(up.body._trace, undefined);
  assert.equal(up.body.messages[0]._id, undefined);
  assert.equal(up.body.messages[0].content[0]._note, undefined);
  assert.deepEqual(up.body.messages[1].content[0].input, { _keep: 'the model said it' });
  assert.deepEqual(up.body.tools, body.tools);
});

test('a passed request carries the route\'s api_key as x-api-key; without one the client\'s key goes as it came', async () => {
  const c = client('/apass');
  await assert.rejects(c.messages.create({ model: 'mock-agent', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
  let up = await lastUpstream();
  assert.equal(up.path, '/v1/messages');
  assert.equal(up.headers['x-api-key'], 'route-key');
  assert.equal(up.headers.authorization, undefined);
  await client('').messages.create({ model: 'mock-agent', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
  up = await lastUpstream();
  assert.equal(up.path, '/v1/chat/completions');
  // no route key: the client's (the Anthropic SDK sends it as a Bearer token) goes as it came
  assert.equal(up.headers.authorization, `Bearer ${API_KEY}`, JSON.stringify(up.headers));
});
