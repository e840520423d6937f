// helpers.test.mjs -- the openai SDK's own helpers through toolgate:
// chat.completions.parse() with zodResponseFormat (strict structured
// output) and with zodFunction tools (strict tools whose arguments the SDK
// validates with zod), runTools() (the SDK's tool-runner loop), and
// stream() with tools (its events and finalChatCompletion). Each helper
// parses what comes back against the agent's own schema and tool names, so
// a name left renamed, a null dropped from a property the agent declared
// nullable and required, or a lost call fails it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { baseURL, API_KEY } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/mistral'];

// Every property required, the nullable ones answered null by the mock (as
// a strict model writes them): null is part of the agent's own schema here.
const person = z.object({
  name: z.string(),
  age: z.number().int().nullable(),
  tags: z.array(z.string()),
  home: z.object({ city: z.string(), zip: z.string().nullable() }),
});
const personAnswer = { name: 'x', age: null, tags: [], home: { city: 'x', zip: null } };

const weather = z.object({ city: z.string(), unit: z.enum(['c', 'f']).nullable() });
const lookup = z.object({ id: z.number().int(), fields: z.array(z.string()).nullable() });

for (const route of routes) {
  const name = route || '/ (openai)';
  const client = () => new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 20000 });
  const messages = [{ role: 'user', content: 'Go' }];

  test(`openai SDK parse() with zodResponseFormat via ${name}: nullable fields keep their nulls`, async () => {
    const r = await client().chat.completions.parse({
      model: 'mock-structured',
      messages,
      response_format: zodResponseFormat(person, 'person'),
    });
    assert.deepEqual(r.choices[0].message.parsed, personAnswer);
  });

  test(`openai SDK stream() with zodResponseFormat via ${name}`, async () => {
    const s = client().chat.completions.stream({
      model: 'mock-structured',
      messages,
      response_format: zodResponseFormat(person, 'person'),
    });
    const final = await s.finalChatCompletion();
    assert.deepEqual(final.choices[0].message.parsed, personAnswer);
  });

  const zodTools = [
    zodFunction({ name: 'get_weather', parameters: weather }),
    zodFunction({ name: 'lookup.user', parameters: lookup }),
  ];

  test(`openai SDK parse() with zodFunction tools via ${name}: parsed_arguments under the agent's names`, async () => {
    const r = await client().chat.completions.parse({ model: 'mock-parallel', messages, tools: zodTools });
    const calls = r.choices[0].message.tool_calls;
    assert.deepEqual(calls.map((c) => c.function.name), ['get_weather', 'lookup.user']);
    assert.deepEqual(calls[0].function.parsed_arguments, { city: 'v0', unit: null });
    assert.deepEqual(calls[1].function.parsed_arguments, { id: 1, fields: null });
  });

  test(`openai SDK stream() with zodFunction tools via ${name}: events and final completion`, async () => {
    const s = client().chat.completions.stream({ model: 'mock-parallel', messages, tools: zodTools });
    const done = [];
    s.on('tool_calls.function.arguments.done', (e) => done.push([e.index, e.name, e.parsed_arguments]));
    const final = await s.finalChatCompletion();
    assert.deepEqual(done, [
      [0, 'get_weather', { city: 'v0', unit: null }],
      [1, 'lookup.user', { id: 1, fields: null }],
    ]);
    const calls = final.choices[0].message.tool_calls;
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(calls.map((c) => c.function.name), ['get_weather', 'lookup.user']);
    assert.equal(new Set(calls.map((c) => c.id)).size, 2);
  });

  for (const stream of [false, true]) {
    test(`openai SDK runTools()${stream ? ' streamed' : ''} via ${name}: the runner runs every call and gets the answer`, async () => {
      const ran = [];
      const runner = client().chat.completions.runTools({
        model: 'mock-parallel',
        messages: [{ role: 'user', content: 'Go' }],
        stream,
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              parse: JSON.parse,
              function: (args) => (ran.push(['get_weather', args]), `sunny in ${args.city}`),
            },
          },
          zodFunction({
            name: 'lookup.user',
            parameters: lookup,
            function: (args) => (ran.push(['lookup.user', args]), `user ${args.id}`),
          }),
        ],
      });
      const content = await runner.finalContent();
      assert.deepEqual(ran, [['get_weather', { city: 'v0' }], ['lookup.user', { id: 1, fields: null }]]);
      assert.equal(content, 'results: sunny in v0 | user 1');
    });
  }
}
