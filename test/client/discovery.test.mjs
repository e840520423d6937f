// discovery.test.mjs -- lazy tool discovery end to end, with the real
// openai client: 100 real tools go to toolgate, which shows the upstream
// only its meta-tools; the mock's scripted model searches, asks for a
// schema and calls call_tool; the agent must receive one ordinary call of
// one of ITS tools (never a meta-tool), streamed and not, on several
// dialects; the next turn must send upstream a byte-identical tools array.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { API_KEY } from './common.mjs';

const root = process.env.TG_ROOT_URL;
const mock = process.env.TG_MOCK_URL;
const shared = process.env.TG_SHARED || path.resolve(process.cwd(), '../shared');
const big = JSON.parse(fs.readFileSync(path.join(shared, 'corpus/requests/big-100.json'), 'utf8'));
const tools = big.tools;
const agentNames = new Set(tools.map((t) => t.function.name));
const META = /(^|_)(search_tools|get_tool_schema|call_tool)$/;

async function lastUpstream() {
  const r = await fetch(`${mock}/_last`);
  const j = await r.json();
  return JSON.parse(j.body);
}

async function oneTurn(client, messages, stream, extra = {}) {
  const headers = { 'X-Mock': 'discovery', ...extra };
  if (!stream) {
    const r = await client.chat.completions.create({ model: 'any', messages, tools }, { headers });
    return { message: r.choices[0].message, finish: r.choices[0].finish_reason, usage: r.usage };
  }
  const s = await client.chat.completions.create({ model: 'any', messages, tools, stream: true }, { headers });
  const calls = [];
  let content = '';
  const finishes = [];
  for await (const chunk of s) {
    for (const choice of chunk.choices) {
      if (choice.delta?.content) content += choice.delta.content;
      for (const tc of choice.delta?.tool_calls ?? []) {
        assert.equal(typeof tc.index, 'number', 'every streamed tool call delta has an index');
        calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const c = calls[tc.index];
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.function.name += tc.function.name;
        if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) finishes.push(choice.finish_reason);
    }
  }
  assert.equal(finishes.length, 1, `one finish_reason for the whole stream, got ${finishes}`);
  return {
    message: { role: 'assistant', content: content || null, tool_calls: calls.length ? calls : undefined },
    finish: finishes[0],
  };
}

for (const prefix of ['disc', 'disc-gemini', 'disc-mistral']) {
  for (const stream of [false, true]) {
    test(`discovery via /${prefix}, ${stream ? 'streamed' : 'not streamed'}`, async () => {
      assert.ok(root && mock, 'TG_ROOT_URL and TG_MOCK_URL must be set');
      const client = new OpenAI({ baseURL: `${root}/${prefix}/v1`, apiKey: API_KEY, maxRetries: 0 });
      const messages = [{ role: 'user', content: 'take a screenshot of the current browser page' }];
      const t1 = await oneTurn(client, messages, stream);
      const calls = t1.message.tool_calls ?? [];
      assert.equal(calls.length, 1, `one tool call for the agent: ${JSON.stringify(t1.message)}`);
      const call = calls[0];
      assert.ok(!META.test(call.function.name), `the agent never sees a meta-tool (${call.function.name})`);
      assert.ok(agentNames.has(call.function.name), `the call names one of the agent's tools: ${call.function.name}`);
      assert.ok(call.id, 'the call has an id');
      assert.equal(typeof JSON.parse(call.function.arguments), 'object');
      assert.equal(t1.finish, 'tool_calls');
      const up1 = await lastUpstream();
      assert.ok(up1.tools.length < tools.length, `fewer tools upstream (${up1.tools.length})`);
      assert.ok(up1.tools.some((t) => /search_tools$/.test(t.function.name)), 'search_tools offered upstream');

      // Turn 2: the agent ran its tool and sends the result back.
      const history = [...messages, { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'screenshot saved to /tmp/shot.png' }];
      const t2 = await oneTurn(client, history, stream);
      assert.match(t2.message.content ?? '', /done: screenshot saved/);
      const up2 = await lastUpstream();
      assert.equal(JSON.stringify(up2.tools), JSON.stringify(up1.tools),
        'the tools array sent upstream is identical on every turn');
    });
  }
}

// The model searches with two phrasings and a group (the mock reads "A || B"
// as query A with queries [B], X-Mock-Group as group): the first phrasing
// alone matches nothing, the group keeps the answer among the browser tools,
// and the group list in search_tools' description stays the same bytes.
for (const stream of [false, true]) {
  test(`discovery with queries and a group, ${stream ? 'streamed' : 'not streamed'}`, async () => {
    const client = new OpenAI({ baseURL: `${root}/disc/v1`, apiKey: API_KEY, maxRetries: 0 });
    const messages = [{ role: 'user', content: 'qwxzv || take a screenshot of the current page' }];
    const t1 = await oneTurn(client, messages, stream, { 'X-Mock-Group': 'browser' });
    const calls = t1.message.tool_calls ?? [];
    assert.equal(calls.length, 1, `one tool call for the agent: ${JSON.stringify(t1.message)}`);
    assert.match(calls[0].function.name, /^browser_/, 'the group kept the search among browser tools');
    assert.ok(agentNames.has(calls[0].function.name));
    const up = await lastUpstream();
    const search = up.tools.find((t) => /search_tools$/.test(t.function.name));
    assert.match(search.function.description, /Groups \(.*browser \(\d+\)/);
    assert.ok(search.function.parameters.properties.queries, 'search_tools takes queries');
    assert.ok(search.function.parameters.properties.group, 'search_tools takes a group');
  });
}
