// openai.test.mjs -- the official openai SDK through toolgate: plain text
// and tool calls, non-streaming and streaming, plus error propagation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { baseURL, API_KEY, weatherParameters } from './common.mjs';

const client = () => new OpenAI({ baseURL: baseURL(), apiKey: API_KEY, maxRetries: 0, timeout: 20000 });

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: weatherParameters } },
  { type: 'function', function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: {} } } },
];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

test('openai SDK: non-stream text completion', async () => {
  const r = await client().chat.completions.create({ model: 'gpt-4o-mini', messages });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.content, 'hello from mock');
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('openai SDK: non-stream tool call', async () => {
  const r = await client().chat.completions.create({ model: 'mock-tools', messages, tools });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.id, 'call_mock1');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments), 'object');
});

test('openai SDK: streamed text arrives as deltas', async () => {
  const stream = await client().chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
  let text = '';
  let chunks = 0;
  let finish = null;
  for await (const chunk of stream) {
    chunks++;
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta?.content ?? '';
    finish = c.finish_reason ?? finish;
  }
  assert.equal(text, 'tok0 tok1 tok2 tok3 tok4 ');
  assert.ok(chunks >= 6, `expected one chunk per delta, got ${chunks}`);
  assert.equal(finish, 'stop');
});

test('openai SDK: streamed tool call assembles', async () => {
  const stream = await client().chat.completions.create({ model: 'mock-tools', messages, tools, stream: true });
  const calls = new Map();
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    for (const d of c.delta?.tool_calls ?? []) {
      assert.equal(typeof d.index, 'number', 'every tool-call delta carries an index');
      const cur = calls.get(d.index) ?? { id: '', name: '', args: '' };
      cur.id ||= d.id ?? '';
      cur.name += d.function?.name ?? '';
      cur.args += d.function?.arguments ?? '';
      calls.set(d.index, cur);
    }
    finish = c.finish_reason ?? finish;
  }
  assert.equal(calls.size, 1);
  const call = calls.get(0);
  assert.equal(call.id, 'call_mock1');
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.args), 'object');
  assert.equal(finish, 'tool_calls');
});

test('openai SDK: stream helper returns the final completion', async () => {
  const runner = client().chat.completions.stream({ model: 'mock-tools', messages, tools });
  const final = await runner.finalChatCompletion();
  const call = final.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.equal(call.id, 'call_mock1');
});

test('openai SDK: upstream error surfaces as APIError with its status', async () => {
  await assert.rejects(
    client().chat.completions.create({ model: 'gpt-4o-mini', messages }, { headers: { 'X-Mock': 'status', 'X-Mock-Status': '503' } }),
    (err) => {
      assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
      assert.equal(err.status, 503);
      assert.match(err.message, /mock failure/);
      return true;
    },
  );
});

// Fixtures the mock replays as the provider's answer (X-Mock-Fixture).
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const fixtureDir = mkdtempSync(join(tmpdir(), 'tg-fx-'));
const fixture = (name, body) => {
  const path = join(fixtureDir, name);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
  return path;
};

test('openai SDK: a whole answer to a streaming request still arrives as a stream', async () => {
  const path = fixture('whole.json', {
    id: 'w1', object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Checking.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] } }],
    usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  });
  const stream = client().chat.completions.stream(
    { model: 'gpt-4o-mini', messages, tools, stream: true },
    { headers: { 'X-Mock': 'fixture', 'X-Mock-Fixture': path } });
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  assert.equal(choice.message.content, 'Checking.');
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Paris' });
});

test('openai SDK: a Gemini-shaped error body surfaces its message', async () => {
  const path = fixture('gemini429.json',
    [{ error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } }]);
  await assert.rejects(
    client().chat.completions.create({ model: 'gpt-4o-mini', messages },
      { headers: { 'X-Mock': 'fixture', 'X-Mock-Fixture': path, 'X-Mock-Status': '429' } }),
    (err) => {
      assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
      assert.equal(err.status, 429);
      assert.match(err.message, /Resource has been exhausted/);
      return true;
    },
  );
});
