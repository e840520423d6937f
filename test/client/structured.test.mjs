// structured.test.mjs -- structured outputs through toolgate with the
// Vercel AI SDK. Its openai-compatible provider sends a zod schema as a
// strict response_format (strictJsonSchema defaults to true) with optional
// properties left out of `required`, which OpenAI's strict mode refuses
// (dialects.md section 2). toolgate sends the strict form up (every
// property required, the optional ones nullable); model "mock-structured"
// then answers as a strict model does, null for each optional property,
// and the SDK validates what comes back against the agent's own zod
// schema, where null is not a valid optional number: it passes only if
// toolgate removed those nulls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateObject, streamObject } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { baseURL, API_KEY } from './common.mjs';

const provider = () =>
  createOpenAICompatible({ baseURL: baseURL(), name: 'toolgate', apiKey: API_KEY, supportsStructuredOutputs: true });

const person = z.object({
  name: z.string(),
  age: z.number().int().optional(),
  address: z.object({ city: z.string(), zip: z.string().optional() }).optional(),
});

async function upstreamSchema() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  const body = typeof last.body === 'string' ? JSON.parse(last.body) : last.body;
  return body.response_format.json_schema;
}

test('AI SDK: generateObject with optional fields on a strict response_format', async () => {
  const r = await generateObject({ model: provider()('mock-structured'), schema: person, prompt: 'Who?', maxRetries: 0 });
  assert.deepEqual(r.object, { name: 'x' });
  const js = await upstreamSchema();
  assert.equal(js.strict, true);
  assert.deepEqual([...js.schema.required].sort(), ['address', 'age', 'name']);
  assert.equal(js.schema.additionalProperties, false);
});

test('AI SDK: streamObject with optional fields on a strict response_format', async () => {
  const errors = [];
  const r = streamObject({
    model: provider()('mock-structured'),
    schema: person,
    prompt: 'Who?',
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  for await (const _ of r.partialObjectStream) {
    // drained: the object is checked whole below
  }
  assert.deepEqual(errors, []);
  assert.deepEqual(await r.object, { name: 'x' });
});
