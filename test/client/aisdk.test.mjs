// aisdk.test.mjs -- the Vercel AI SDK (openai-compatible provider) through
// toolgate: generateText and streamText with a tool the model calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, tool, jsonSchema } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { baseURL, API_KEY, weatherParameters } from './common.mjs';

const provider = () => createOpenAICompatible({ baseURL: baseURL(), name: 'toolgate', apiKey: API_KEY });

// No execute(): the SDK must hand the call back to us, not run it.
const tools = {
  get_weather: tool({ description: 'Weather for a city', inputSchema: jsonSchema(weatherParameters) }),
};

test('AI SDK: generateText returns the tool call', async () => {
  const r = await generateText({ model: provider()('mock-tools'), prompt: 'Weather in Paris?', tools, maxRetries: 0 });
  assert.equal(r.finishReason, 'tool-calls');
  assert.equal(r.toolCalls.length, 1);
  assert.equal(r.toolCalls[0].toolName, 'get_weather');
  assert.equal(r.toolCalls[0].toolCallId, 'call_mock1');
  assert.deepEqual(r.toolCalls[0].input, {});
});

test('AI SDK: generateText plain text', async () => {
  const r = await generateText({ model: provider()('gpt-4o-mini'), prompt: 'hi', maxRetries: 0 });
  assert.equal(r.text, 'hello from mock');
  assert.equal(r.toolCalls.length, 0);
});

test('AI SDK: streamText streams the tool call', async () => {
  const errors = [];
  const r = streamText({
    model: provider()('mock-tools'),
    prompt: 'Weather in Paris?',
    tools,
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  const parts = [];
  for await (const part of r.fullStream) parts.push(part.type);
  assert.deepEqual(errors, []);
  const calls = await r.toolCalls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].toolName, 'get_weather');
  assert.equal(calls[0].toolCallId, 'call_mock1');
  assert.ok(parts.includes('tool-call'), `no tool-call part in ${parts.join(',')}`);
  assert.equal(await r.finishReason, 'tool-calls');
});

test('AI SDK: streamText streams text deltas', async () => {
  const r = streamText({ model: provider()('gpt-4o-mini'), prompt: 'hi', maxRetries: 0 });
  const deltas = [];
  for await (const d of r.textStream) deltas.push(d);
  assert.equal(deltas.join(''), 'tok0 tok1 tok2 tok3 tok4 ');
  assert.ok(deltas.length >= 5, `expected one delta per chunk, got ${deltas.length}`);
});
