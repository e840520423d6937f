// agents-sdk.test.mjs -- the OpenAI Agents SDK for JS (@openai/agents)
// through toolgate: an Agent with function tools (zod parameters) run with
// run(agent, input), whole and streamed, with the SDK's default Responses
// model (bridged over chat on every route: /, /gemini, /mistral, /anthropic,
// /groq, /rbridge) and with its Chat Completions model.
//
// Model "mock-parallel" (the mock) calls the first declared tool with
// arguments sampled from its schema (strings "v0"), then, once the result
// answers that call by id, says "results: <tool output>"; so the tool must
// run with the arguments the model wrote, and the answer must quote its
// output. The SDK itself turns a dotted name into underscores
// (toFunctionToolName), so a dotted name never leaves it; a name that starts
// with a digit is one it keeps and Gemini refuses (rule 32), so toolgate
// renames it there and must give it back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  Agent,
  run,
  tool,
  setTracingDisabled,
  OpenAIResponsesModel,
  OpenAIChatCompletionsModel,
  setDefaultOpenAIClient,
} from '@openai/agents';
import { z } from 'zod';
import { baseURL, API_KEY } from './common.mjs';

setTracingDisabled(true);

const root = () => baseURL().replace(/\/v1$/, '');
const bridged = ['/gemini', '/mistral', '/anthropic', '/groq'];
const chatRoutes = ['', ...bridged];
const responsesRoutes = ['', ...bridged, '/rbridge']; // '' and /rbridge: openai routes, which bridge too

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  return { path: last.path, body: typeof last.body === 'string' ? JSON.parse(last.body) : last.body };
}

// A client whose requests are recorded: which toolgate endpoint the SDK used.
const paths = [];
function client(route) {
  const fetchRec = (url, init) => {
    paths.push(new URL(String(url)).pathname);
    return fetch(url, init);
  };
  return new OpenAI({ baseURL: `${root()}${route}/v1`, apiKey: API_KEY, maxRetries: 0, fetch: fetchRec });
}

function usedEndpoint(route, kind) {
  const want = `${route}/v1/${kind === 'Responses' ? 'responses' : 'chat/completions'}`;
  assert.ok(paths.length > 0 && paths.every((p) => p === want), `every request went to ${want}: ${paths}`);
  paths.length = 0;
}

// One agent with one weather tool; `seen` collects the arguments it ran with.
function weatherAgent(model, name = 'get_weather') {
  const seen = [];
  const agent = new Agent({
    name: 'Weather agent',
    instructions: 'Answer with the weather.',
    model,
    tools: [
      tool({
        name,
        description: 'Weather for a city',
        parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']) }),
        execute: async ({ city, unit }) => {
          seen.push({ city, unit });
          return `sunny in ${city} (${unit})`;
        },
      }),
    ],
  });
  return { agent, seen };
}

function toolItems(result) {
  const calls = result.newItems.filter((i) => i.type === 'tool_call_item');
  const outputs = result.newItems.filter((i) => i.type === 'tool_call_output_item');
  return { calls, outputs };
}

function checkRun(result, seen, name) {
  assert.deepEqual(seen, [{ city: 'v0', unit: 'c' }], 'the tool ran once, with the arguments the model wrote');
  const { calls, outputs } = toolItems(result);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].rawItem.name, name, 'the agent sees its own tool name');
  assert.deepEqual(JSON.parse(calls[0].rawItem.arguments), { city: 'v0', unit: 'c' });
  assert.equal(outputs.length, 1);
  assert.equal(result.finalOutput, 'results: sunny in v0 (c)');
}

async function drain(streamed) {
  let text = '';
  for await (const chunk of streamed.toTextStream()) text += chunk;
  await streamed.completed;
  assert.equal(streamed.error ?? null, null);
  return text;
}

const models = [
  ...responsesRoutes.map((route) => ({ kind: 'Responses', route, make: (m) => new OpenAIResponsesModel(client(route), m) })),
  ...chatRoutes.map((route) => ({ kind: 'ChatCompletions', route, make: (m) => new OpenAIChatCompletionsModel(client(route), m) })),
];

for (const { kind, route, make } of models) {
  const via = route || '/ (openai)';

  test(`Agents SDK ${kind} model, run() via ${via}: the tool runs with its arguments, the answer quotes it`, async () => {
    paths.length = 0;
    const { agent, seen } = weatherAgent(make('mock-parallel'));
    const result = await run(agent, 'Weather in Paris?');
    checkRun(result, seen, 'get_weather');
    usedEndpoint(route, kind);
    const up = await lastUpstream();
    assert.equal(up.path, '/v1/chat/completions', 'the bridge speaks chat to the provider');
    const tool = up.body.messages.find((m) => m.role === 'tool');
    assert.equal(tool.content, 'sunny in v0 (c)');
    assert.ok(up.body.messages.some((m) => m.role === 'system' && /Answer with the weather/.test(m.content)),
      'the instructions went up as a system turn');
  });

  test(`Agents SDK ${kind} model, streamed run() via ${via}`, async () => {
    const { agent, seen } = weatherAgent(make('mock-parallel'));
    paths.length = 0;
    const streamed = await run(agent, 'Weather in Paris?', { stream: true });
    const text = await drain(streamed);
    usedEndpoint(route, kind);
    checkRun(streamed, seen, 'get_weather');
    assert.equal(text, 'results: sunny in v0 (c)');
    assert.equal((await lastUpstream()).body.stream, true);
  });

  test(`Agents SDK ${kind} model via ${via}: a name Gemini refuses (leading digit) comes back as the agent's`, async () => {
    const { agent, seen } = weatherAgent(make('mock-parallel'), '7day_forecast');
    const result = await run(agent, 'Forecast for Paris?');
    checkRun(result, seen, '7day_forecast');
    const up = await lastUpstream();
    const sent = up.body.tools.map((t) => t.function.name);
    if (route === '/gemini') assert.ok(!sent.includes('7day_forecast'), `renamed for Gemini: ${sent}`);
    else assert.deepEqual(sent, ['7day_forecast']);
    const streamed = await run(agent, 'Forecast for Paris?', { stream: true });
    await drain(streamed);
    assert.equal(toolItems(streamed).calls[0].rawItem.name, '7day_forecast');
    assert.equal(streamed.finalOutput, 'results: sunny in v0 (c)');
  });
}

// The default model: setDefaultOpenAIClient + a model name, as most agents
// are written; Responses unless told otherwise.
test('Agents SDK default client and model (Responses) via /anthropic', async () => {
  paths.length = 0;
  setDefaultOpenAIClient(client('/anthropic'));
  try {
    const { agent, seen } = weatherAgent('mock-parallel');
    const result = await run(agent, 'Weather in Paris?');
    checkRun(result, seen, 'get_weather');
    usedEndpoint('/anthropic', 'Responses');
  } finally {
    setDefaultOpenAIClient(undefined);
  }
});

// Structured output: an Agent with an outputType (zod) sends a JSON schema
// (text.format on Responses, response_format on chat); "mock-structured"
// writes JSON fitting the schema that reached it, and the SDK parses it.
for (const { kind, route, make } of models) {
  const via = route || '/ (openai)';
  test(`Agents SDK ${kind} model via ${via}: outputType (zod) comes back parsed`, async () => {
    const agent = new Agent({
      name: 'Extractor',
      instructions: 'Extract the person.',
      model: make('mock-structured'),
      outputType: z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) }),
    });
    paths.length = 0;
    const result = await run(agent, 'Ada, 36');
    usedEndpoint(route, kind);
    assert.deepEqual(result.finalOutput, { name: 'x', age: 1, tags: [] });
    const up = await lastUpstream();
    assert.equal(up.body.response_format.type, 'json_schema');
    assert.deepEqual(Object.keys(up.body.response_format.json_schema.schema.properties).sort(), ['age', 'name', 'tags']);
  });
}

// A handoff is a tool call too (transfer_to_<agent>): the triage agent's
// model calls it, the SDK switches agents, and the second agent's first
// request carries the handoff's call and output in its history, paired by id.
for (const { kind, route, make } of models.filter((m) => m.kind === 'Responses' || m.route === '')) {
  const via = route || '/ (openai)';
  test(`Agents SDK ${kind} model via ${via}: a handoff goes to the other agent`, async () => {
    const weather = new Agent({ name: 'Weather agent', instructions: 'Weather.', model: make('mock-parallel') });
    const triage = new Agent({ name: 'Triage', instructions: 'Route.', model: make('mock-parallel'), handoffs: [weather] });
    const result = await run(triage, 'Weather in Paris?');
    assert.equal(result.lastAgent.name, 'Weather agent');
    const handoff = result.newItems.find((i) => i.type === 'handoff_call_item');
    assert.equal(handoff.rawItem.name, 'transfer_to_Weather_agent');
    assert.match(result.finalOutput, /^results: .*Weather agent/);
    const up = await lastUpstream();
    assert.ok(up.body.messages.some((m) => m.role === 'system' && m.content === 'Weather.'), 'the second agent asked');
  });
}

// Two tools, two calls in one turn (ids call_par0, call_par1, each rewritten
// for Mistral and paired again on the way back): both run, and the answer
// lists both results in call order, whole and streamed.
for (const { kind, route, make } of models) {
  const via = route || '/ (openai)';
  test(`Agents SDK ${kind} model via ${via}: two calls in one turn, both results in order`, async () => {
    const ran = [];
    const mkTool = (name, sky) => tool({
      name,
      description: `${sky} weather`,
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        ran.push([name, city]);
        return `${sky} in ${city}`;
      },
    });
    const agent = new Agent({ name: 'Two', instructions: 'Both.', model: make('mock-parallel'), tools: [mkTool('sunny_check', 'sunny'), mkTool('rain_check', 'rainy')] });
    for (const stream of [false, true]) {
      ran.length = 0;
      const result = await run(agent, 'Weather?', stream ? { stream: true } : {});
      if (stream) await drain(result);
      assert.deepEqual(ran.sort(), [['rain_check', 'v1'], ['sunny_check', 'v0']]);
      assert.deepEqual(toolItems(result).calls.map((c) => c.rawItem.name), ['sunny_check', 'rain_check']);
      assert.equal(result.finalOutput, 'results: sunny in v0 | rainy in v1');
    }
  });
}

// A handoff (issue 26): a triage agent whose one tool is the SDK's handoff
// to a weather agent. The mock calls the first declared tool, so the triage
// turn calls transfer_to_weather_agent; the SDK hands over, and the weather
// agent's turn (its own instructions, its own tool, the history with the
// handoff's call and output) is answered by the mock quoting that output.
// The run must end on the weather agent, with the handoff's call and its
// output having gone up as a function call and a tool result.
for (const { kind, route, make } of models.filter((m) => m.route === '' || m.route === '/gemini')) {
  const via = route || '/ (openai)';
  for (const stream of [false, true]) {
    test(`Agents SDK ${kind} model via ${via}: a handoff to a second agent${stream ? ', streamed' : ''}`, async () => {
      const { agent: weather } = weatherAgent(make('mock-parallel'));
      const triage = Agent.create({
        name: 'Triage agent',
        instructions: 'Hand weather questions to the weather agent.',
        model: make('mock-parallel'),
        handoffs: [weather],
      });
      const result = await run(triage, 'Weather in Paris?', stream ? { stream: true } : undefined);
      if (stream) await drain(result);
      assert.equal(result.lastAgent?.name, 'Weather agent', 'the run ended on the agent handed to');
      const handoffCall = result.newItems.find((i) => i.type === 'handoff_call_item');
      assert.ok(handoffCall, `a handoff call item: ${result.newItems.map((i) => i.type)}`);
      assert.match(handoffCall.rawItem.name, /^transfer_to_weather_agent$/i);
      const up = await lastUpstream();
      assert.ok(up.body.messages.some((m) => m.role === 'system' && /Answer with the weather/.test(m.content)),
        'the weather agent\'s instructions went up for its turn');
      const names = (up.body.tools || []).map((t) => t.function.name);
      assert.ok(names.some((n) => /get_weather/.test(n)), `the weather agent's tool went up: ${names}`);
      assert.ok(up.body.messages.some((m) => m.role === 'tool'), 'the handoff\'s output went up as a tool result');
      assert.match(String(result.finalOutput), /^results: /);
    });
  }
}
