// agent.test.mjs -- whole agent loops through toolgate with real SDKs: the
// model calls a tool, the SDK runs it and sends the result back, the model
// answers. Model "mock-agent" ends the loop only when the tool result it
// gets answers a call of its history by that call's id, so a proxy that
// rewrites ids (Mistral's 9 characters, rule 42; Anthropic's alphabet,
// rule 39) or names (a dotted name for strict name rules, section 7) must
// keep both turns paired and give the agent its own names back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { baseURL, API_KEY, streamAgentLoop } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/mistral', '/anthropic', '/groq'];
const city = { type: 'object', properties: { city: { type: 'string' } } };

for (const route of routes) {
  const name = route || '/ (openai)';
  const url = `${root()}${route}/v1`;

  test(`AI SDK agent loop via ${name}: tool call, result, answer`, async () => {
    const seen = [];
    const provider = createOpenAICompatible({ baseURL: url, name: 'toolgate', apiKey: API_KEY });
    const r = await generateText({
      model: provider('mock-agent'),
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
    assert.match(r.text, /^result: .*sunny/);
  });

  test(`AI SDK streamed agent loop via ${name}`, async () => {
    const provider = createOpenAICompatible({ baseURL: url, name: 'toolgate', apiKey: API_KEY });
    const { text, steps } = await streamAgentLoop(streamText, stepCountIs, {
      model: provider('mock-agent'),
      prompt: 'Weather in Paris?',
      tools: {
        'weather.get': tool({ inputSchema: jsonSchema(city), execute: async () => 'sunny' }),
      },
    });
    assert.equal(steps.length, 2);
    assert.match(text, /^result: .*sunny/);
  });

  test(`openai SDK agent loop via ${name}: the call's id goes back with its result`, async () => {
    const client = new OpenAI({ baseURL: url, apiKey: API_KEY, maxRetries: 0 });
    const tools = [{ type: 'function', function: { name: 'weather.get', parameters: city } }];
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({ model: 'mock-agent', messages, tools });
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'weather.get');
    messages.push(first.choices[0].message);
    messages.push({ role: 'tool', tool_call_id: call.id, content: 'sunny' });
    const second = await client.chat.completions.create({ model: 'mock-agent', messages, tools });
    assert.equal(second.choices[0].finish_reason, 'stop');
    assert.equal(second.choices[0].message.content, 'result: sunny');
  });
}
