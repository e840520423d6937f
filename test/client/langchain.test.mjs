// langchain.test.mjs -- LangChain JS (@langchain/openai's ChatOpenAI)
// through toolgate: bindTools (the calls come back as tool_calls with the
// agent's own names and parsed args, whole and as streamed tool_call_chunks),
// a tool loop closed with a ToolMessage, withStructuredOutput (a zod schema,
// method jsonSchema and functionCalling), and the same on the Responses API
// (useResponsesApi: true) through the bridged routes (all of them).
//
// Model "mock-parallel" (the mock) calls the first declared tool (or the one
// tool_choice forces) with arguments sampled from its schema, strings "v0";
// once the result answers the call by id it says "results: <output>".
// "mock-structured" writes JSON fitting the request's response_format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, ToolMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { concat } from '@langchain/core/utils/stream';
import { z } from 'zod';
import { baseURL, API_KEY } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const bridged = ['/gemini', '/mistral', '/anthropic', '/groq'];
const chatRoutes = ['', ...bridged];
const responsesRoutes = ['', ...bridged, '/rbridge']; // every route but passthrough bridges

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  return { path: last.path, body: typeof last.body === 'string' ? JSON.parse(last.body) : last.body };
}

// Which toolgate endpoint LangChain used, recorded by the client's fetch.
const paths = [];
function chat(route, model, extra = {}) {
  const fetchRec = (url, init) => {
    paths.push(new URL(String(url)).pathname);
    return fetch(url, init);
  };
  paths.length = 0;
  return new ChatOpenAI({
    model,
    apiKey: API_KEY,
    maxRetries: 0,
    configuration: { baseURL: `${root()}${route}/v1`, fetch: fetchRec },
    ...extra,
  });
}

function usedEndpoint(route, responses) {
  const want = `${route}/v1/${responses ? 'responses' : 'chat/completions'}`;
  assert.ok(paths.length > 0 && paths.every((p) => p === want), `every request went to ${want}: ${paths}`);
}

// A dotted name (renamed on the way to Gemini's, Mistral's and Anthropic's
// rules where it breaks them) and a zod schema.
const weather = tool(async ({ city, unit }) => `sunny in ${city} (${unit})`, {
  name: 'weather.get',
  description: 'Weather for a city',
  schema: z.object({ city: z.string(), unit: z.enum(['c', 'f']) }),
});
const person = z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) });

const variants = [
  ...chatRoutes.map((route) => ({ route, responses: false })),
  ...responsesRoutes.map((route) => ({ route, responses: true })),
];

for (const { route, responses } of variants) {
  const via = `${route || '/ (openai)'}${responses ? ', useResponsesApi' : ''}`;
  const extra = responses ? { useResponsesApi: true } : {};

  test(`LangChain bindTools via ${via}: tool_calls with the agent's name and parsed args, then the answer`, async () => {
    const model = chat(route, 'mock-parallel', extra).bindTools([weather]);
    const messages = [new SystemMessage('Be brief.'), new HumanMessage('Weather in Paris?')];
    const ai = await model.invoke(messages);
    assert.equal(ai.tool_calls.length, 1, JSON.stringify(ai));
    const call = ai.tool_calls[0];
    assert.equal(call.name, 'weather.get');
    assert.deepEqual(call.args, { city: 'v0', unit: 'c' });
    assert.ok(call.id);
    assert.deepEqual(ai.invalid_tool_calls ?? [], []);
    const out = await weather.invoke(call);
    assert.ok(out instanceof ToolMessage);
    messages.push(ai, out);
    const answer = await model.invoke(messages);
    assert.equal(answer.text, 'results: sunny in v0 (c)');
    assert.deepEqual(answer.tool_calls, []);
    usedEndpoint(route, responses);
    const up = await lastUpstream();
    assert.equal(up.path, '/v1/chat/completions');
    const sent = up.body.tools.map((t) => t.function.name);
    // a dotted name is Gemini's own; every other dialect gets a stand-in
    if (route === '/gemini') assert.deepEqual(sent, ['weather.get']);
    else assert.ok(sent.length === 1 && /^[a-zA-Z0-9_-]{1,64}$/.test(sent[0]), `renamed: ${sent}`);
    assert.equal(up.body.messages.find((m) => m.role === 'tool').content, 'sunny in v0 (c)');
  });

  test(`LangChain .stream() with bound tools via ${via}: tool_call_chunks add up to the call`, async () => {
    const model = chat(route, 'mock-parallel', extra).bindTools([weather]);
    let full;
    let chunks = 0;
    for await (const chunk of await model.stream('Weather in Paris?')) {
      chunks++;
      full = full ? concat(full, chunk) : chunk;
    }
    assert.ok(chunks > 1, `streamed in ${chunks} chunks`);
    assert.ok(full.tool_call_chunks.length >= 1);
    assert.equal(full.tool_calls.length, 1, JSON.stringify(full.tool_call_chunks));
    assert.equal(full.tool_calls[0].name, 'weather.get');
    assert.deepEqual(full.tool_calls[0].args, { city: 'v0', unit: 'c' });
    usedEndpoint(route, responses);
    assert.equal((await lastUpstream()).body.stream, true);
  });

  for (const method of ['jsonSchema', 'functionCalling']) {
    test(`LangChain withStructuredOutput(zod, ${method}) via ${via}`, async () => {
      const mock = method === 'jsonSchema' ? 'mock-structured' : 'mock-parallel';
      const model = chat(route, mock, extra).withStructuredOutput(person, { method, name: 'person' });
      const got = await model.invoke('Ada, 36, mathematician');
      usedEndpoint(route, responses);
      const up = await lastUpstream();
      if (method === 'jsonSchema') {
        assert.deepEqual(got, { name: 'x', age: 1, tags: [] });
        assert.equal(up.body.response_format.type, 'json_schema');
        assert.deepEqual(Object.keys(up.body.response_format.json_schema.schema.properties).sort(), ['age', 'name', 'tags']);
      } else {
        assert.deepEqual(got, { name: 'v0', age: 1, tags: [] });
        assert.equal(up.body.tools.length, 1);
        assert.ok(up.body.tool_choice, 'the call of the schema tool is forced');
      }
    });
  }

  test(`LangChain withStructuredOutput streamed via ${via}`, async () => {
    const model = chat(route, 'mock-structured', extra).withStructuredOutput(person, { method: 'jsonSchema' });
    let last;
    for await (const partial of await model.stream('Ada')) last = partial;
    assert.deepEqual(last, { name: 'x', age: 1, tags: [] });
    usedEndpoint(route, responses);
  });

  test(`LangChain bindTools with a forced tool_choice of a dotted name via ${via}`, async () => {
    const model = chat(route, 'mock-parallel', extra).bindTools([weather, tool(async () => 'x', {
      name: 'other.tool', description: 'Other', schema: z.object({ q: z.string() }),
    })], { tool_choice: 'weather.get' });
    const ai = await model.invoke('Weather in Paris?');
    assert.deepEqual(ai.tool_calls.map((c) => [c.name, c.args]), [['weather.get', { city: 'v0', unit: 'c' }]]);
    usedEndpoint(route, responses);
    const up = await lastUpstream();
    if (route === '/mistral') {
      // rule 46: Mistral has no named form; "any" over the named tool alone
      assert.equal(up.body.tool_choice, 'any');
      assert.equal(up.body.tools.length, 1);
    } else {
      const forced = up.body.tool_choice?.function?.name;
      assert.ok(up.body.tools.some((t) => t.function.name === forced), `tool_choice names a tool sent: ${JSON.stringify(up.body.tool_choice)}`);
    }
  });
}
