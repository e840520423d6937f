// aisdk-anthropic-object.test.mjs -- structured output with the AI SDK's
// Anthropic provider through the Messages bridge. The provider has two
// ways (structuredOutputMode): outputFormat sends the schema as
// output_config.format, which the bridge gives upstream as a strict
// response_format (model "mock-structured" answers JSON fitting it);
// jsonTool declares a tool named "json" whose input is the schema and
// forces it with tool_choice, and reads the object from the tool_use
// (model "mock-parallel" calls the forced tool with arguments sampled from
// its schema). Both must come back as the object, whole and streamed, on
// every route that bridges /v1/messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateObject, streamObject } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';
import { baseURL, API_KEY } from './common.mjs';

const routes = ['', '/gemini', '/mistral', '/groq', '/abridge'];
const person = z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) });

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  return typeof last.body === 'string' ? JSON.parse(last.body) : last.body;
}

const model = (route, id) =>
  createAnthropic({ baseURL: `${baseURL().replace(/\/v1$/, '')}${route}/v1`, apiKey: API_KEY })(id);

for (const route of routes) {
  const via = route || '/ (openai)';
  for (const mode of ['outputFormat', 'jsonTool']) {
    const id = mode === 'outputFormat' ? 'mock-structured' : 'mock-parallel';
    const providerOptions = { anthropic: { structuredOutputMode: mode } };

    test(`AI SDK Anthropic provider generateObject (${mode}) via ${via}`, async () => {
      const r = await generateObject({ model: model(route, id), schema: person, prompt: 'Who?', maxRetries: 0, providerOptions });
      if (mode === 'outputFormat') {
        assert.deepEqual(r.object, { name: 'x', age: 1, tags: [] });
        const up = await lastUpstream();
        assert.ok(up.response_format?.json_schema?.schema, `a response_format went up: ${JSON.stringify(up.response_format)}`);
      } else {
        assert.deepEqual(r.object, { name: 'v0', age: 1, tags: [] });
        const up = await lastUpstream();
        assert.deepEqual(up.tools.map((t) => t.function.name), ['json']);
        assert.ok(up.tool_choice, 'the json tool is forced');
      }
    });

    test(`AI SDK Anthropic provider streamObject (${mode}) via ${via}`, async () => {
      const errors = [];
      const r = streamObject({
        model: model(route, id), schema: person, prompt: 'Who?', maxRetries: 0, providerOptions,
        onError: ({ error }) => errors.push(error),
      });
      for await (const _ of r.partialObjectStream) {
        // drained: the object is checked whole below
      }
      assert.deepEqual(errors.map(String), []);
      assert.equal(typeof (await r.object).name, 'string');
    });
  }
}
