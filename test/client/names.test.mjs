// names.test.mjs -- tool names the dialects must rename (section 7: dots,
// dashes, more than 64 characters, spaces, non-ASCII letters, two names
// that clean up to the same text) through real SDK loops. Model
// "mock-parallel" with X-Mock-Calls: N calls each of the N declared tools
// in one turn under the name it was sent upstream, then answers with every
// result in call order; the SDK must see its own names back, run its own
// function for each, and send a history the provider's strict validator
// (X-Mock: strict:<provider>) accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { baseURL, API_KEY } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');

const names = [
  'github.create_issue',
  'mcp__server__tool-name',
  'mcp__a_rather_long_server_name_for_tests__tool_with_a_long_descriptive_name_v2', // 79
  'mcp__a_rather_long_server_name_for_tests__tool_with_a_long_descriptive_name_v3', // same first 64
  'get weather',
  'météo.du_jour',
  'search.files',
  'search_files', // what search.files cleans up to
  '2fa-code', // starts with a digit (Gemini wants a letter or _)
];
const param = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
const headers = { 'X-Mock-Calls': String(names.length) };
const expected = names.map((n, i) => `${n}:v${i}`).join(' | ');

const routes = ['', '/gemini', '/mistral', '/anthropic', '/groq'];
// [route, strict personality, model] for the strict checks of names and
// of the history that carries them back.
const strict = [
  ['', 'openai', 'gpt-4o-mini'],
  ['/gemini', 'gemini', 'gemini-2.5-flash'],
  ['/mistral', 'mistral', 'mistral-large-latest'],
  ['/anthropic', 'anthropic', 'claude-sonnet-4-5'],
  ['/groq', 'groq', 'llama-3.3-70b-versatile'],
];

const cases = [
  ...routes.map((r) => [r, 'mock-parallel', headers, r || '/ (openai)']),
  ...strict.map(([r, p, m]) => [r, m, { ...headers, 'X-Mock': `strict:${p}`, 'X-Mock-Then': 'parallel' }, `strict ${p}`]),
];

for (const [route, model, hdrs, label] of cases) {
  const url = () => `${root()}${route}/v1`;

  for (const stream of [false, true]) {
    test(`openai SDK runTools()${stream ? ' streamed' : ''} with names to rename via ${label}`, async () => {
      const client = new OpenAI({ baseURL: url(), apiKey: API_KEY, maxRetries: 0, timeout: 20000, defaultHeaders: hdrs });
      const ran = [];
      const runner = client.chat.completions.runTools({
        model,
        stream,
        messages: [{ role: 'user', content: 'Use them all' }],
        tools: names.map((n) => ({
          type: 'function',
          function: {
            name: n,
            description: `the tool ${n}`,
            parameters: param,
            parse: JSON.parse,
            function: (args) => (ran.push(n), `${n}:${args.q}`),
          },
        })),
      });
      const content = await runner.finalContent();
      assert.deepEqual(ran, names, 'every tool ran, under its own name');
      assert.equal(content, `results: ${expected}`);
    });
  }

  for (const mode of ['generateText', 'streamText']) {
    test(`AI SDK ${mode} with names to rename via ${label}`, async () => {
      const ran = [];
      const errors = [];
      const provider = createOpenAICompatible({ baseURL: url(), name: 'toolgate', apiKey: API_KEY, headers: hdrs });
      const args = {
        model: provider(model),
        prompt: 'Use them all',
        tools: Object.fromEntries(
          names.map((n) => [n, tool({ description: `the tool ${n}`, inputSchema: jsonSchema(param), execute: async (a) => (ran.push(n), `${n}:${a.q}`) })]),
        ),
        stopWhen: stepCountIs(4),
        maxRetries: 0,
      };
      let text;
      let steps;
      if (mode === 'generateText') {
        const r = await generateText(args);
        text = r.text;
        steps = r.steps;
      } else {
        const r = streamText({ ...args, onError: ({ error }) => errors.push(error) });
        text = '';
        for await (const d of r.textStream) text += d;
        steps = await r.steps;
      }
      assert.deepEqual(errors.map(String), []);
      assert.deepEqual(steps[0].toolCalls.map((c) => c.toolName), names);
      assert.deepEqual([...ran].sort(), [...names].sort(), 'every tool ran, under its own name');
      // the AI SDK sends a string result JSON-encoded
      assert.equal(text.replaceAll('"', ''), `results: ${expected}`);
    });
  }
}

// A forced tool_choice names a tool that is renamed upstream: the choice
// must name the renamed tool (Mistral takes only "any", with the list cut
// to that tool, rule 46), and the call must come back under the agent's
// name. The mock obeys a forced choice as a model does, calling the tool
// the choice names, whatever the list holds.
for (const [route, model, callsHdrs, label] of cases) {
  const url = () => `${root()}${route}/v1`;
  // without X-Mock-Calls: Mistral's list cut to one tool gets one call
  const { 'X-Mock-Calls': _, ...hdrs } = callsHdrs;
  for (const forced of ['github.create_issue', 'météo.du_jour', names[3]]) {
    test(`openai SDK forced tool_choice ${forced.slice(0, 24)} via ${label}`, async () => {
      const client = new OpenAI({ baseURL: url(), apiKey: API_KEY, maxRetries: 0, timeout: 20000, defaultHeaders: hdrs });
      const r = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Use that one' }],
        tools: names.map((n) => ({ type: 'function', function: { name: n, parameters: param } })),
        tool_choice: { type: 'function', function: { name: forced } },
      });
      const calls = r.choices[0].message.tool_calls;
      assert.deepEqual(calls.map((c) => c.function.name), [forced]);
    });
  }

  test(`AI SDK toolChoice on a renamed tool via ${label}`, async () => {
    const ran = [];
    const provider = createOpenAICompatible({ baseURL: url(), name: 'toolgate', apiKey: API_KEY, headers: hdrs });
    const r = await generateText({
      model: provider(model),
      prompt: 'Use that one',
      tools: Object.fromEntries(names.map((n) => [n, tool({ inputSchema: jsonSchema(param), execute: async () => (ran.push(n), 'done') })])),
      toolChoice: { type: 'tool', toolName: 'mcp__server__tool-name' },
      maxRetries: 0,
    });
    assert.deepEqual(r.toolCalls.map((c) => c.toolName), ['mcp__server__tool-name']);
    assert.deepEqual(ran, ['mcp__server__tool-name']);
  });
}
