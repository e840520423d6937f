// aisdk-openai.test.mjs -- the Vercel AI SDK's own OpenAI provider
// (@ai-sdk/openai) through toolgate, on its chat-completions model
// (`.chat()`; its default model speaks the Responses API, which toolgate
// relays untouched). Its tools and structured outputs are strict by
// default, so this is the client that meets dialects.md section 2 first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, generateObject, tool, jsonSchema } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { baseURL, API_KEY, weatherParameters } from './common.mjs';

const openai = () => createOpenAI({ baseURL: baseURL(), apiKey: API_KEY });
const tools = {
  get_weather: tool({ description: 'Weather for a city', inputSchema: jsonSchema(weatherParameters) }),
};

test('@ai-sdk/openai chat: generateText returns the tool call', async () => {
  const r = await generateText({ model: openai().chat('mock-tools'), prompt: 'Weather in Paris?', tools, maxRetries: 0 });
  assert.equal(r.finishReason, 'tool-calls');
  assert.equal(r.toolCalls.length, 1);
  assert.equal(r.toolCalls[0].toolName, 'get_weather');
  assert.deepEqual(r.toolCalls[0].input, {});
});

test('@ai-sdk/openai chat: streamText streams the tool call', async () => {
  const errors = [];
  const r = streamText({
    model: openai().chat('mock-tools'),
    prompt: 'Weather in Paris?',
    tools,
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  for await (const _ of r.fullStream) {
    // drained: the result is checked below
  }
  assert.deepEqual(errors, []);
  const calls = await r.toolCalls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].toolName, 'get_weather');
  assert.equal(await r.finishReason, 'tool-calls');
});

test('@ai-sdk/openai chat: generateObject with an optional field (strict by default)', async () => {
  const r = await generateObject({
    model: openai().chat('mock-structured'),
    schema: z.object({ name: z.string(), nickname: z.string().optional() }),
    prompt: 'Who?',
    maxRetries: 0,
  });
  assert.deepEqual(r.object, { name: 'x' });
});
