// gemini.test.mjs -- Google's Gemini API (/v1beta/models/MODEL:generateContent
// and :streamGenerateContent?alt=sse) bridged to chat completions, with the
// real client that speaks it: the @google/genai SDK (the one Gemini CLI is
// built on). Every route bridges the API by default: the root route
// (openai), /gemini, /anthropic and /mistral here, and /gstrict, a gemini
// route to the mock's strict Gemini validator (which wants a Gemini 3
// call's thought signature back). Model "mock-agent" calls the first
// declared tool and ends its loop only when a tool result answers its call
// by id; a Gemini 2 agent sends its functionResponse without an id, so the
// bridge must pair it with its call by name and order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, ApiError, createPartFromFunctionResponse, createFunctionResponsePartFromBase64 } from '@google/genai';
import { baseURL, API_KEY } from './common.mjs';

const root = () => baseURL().replace(/\/v1$/, '');
const routes = ['', '/gemini', '/anthropic', '/mistral'];
const weather = {
  name: 'weather.get',
  description: 'Weather for a city',
  parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } },
};
const tools = [{ functionDeclarations: [weather] }];

const client = (route, headers = {}) =>
  new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: `${root()}${route}`, headers } });

async function lastUpstream() {
  const last = await (await fetch(`${process.env.TG_MOCK_URL}/_last`)).json();
  return { path: last.path, body: typeof last.body === 'string' ? JSON.parse(last.body) : last.body };
}

// The function responses a Gemini 2 agent sends: no id, paired by name.
const responsesFor = (calls, withIds) => ({
  role: 'user',
  parts: calls.map((c) => ({
    functionResponse: { ...(withIds ? { id: c.id } : {}), name: c.name, response: { output: 'sunny' } },
  })),
});

for (const route of routes) {
  test(`@google/genai generateContent loop via ${route || '/'}: functionCall, functionResponse, answer`, async () => {
    const ai = client(route, { 'X-Mock-Say': 'Let me check.' });
    const contents = [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }];
    const config = { tools, systemInstruction: 'Be brief.', temperature: 0.2, maxOutputTokens: 256 };
    const first = await ai.models.generateContent({ model: 'mock-agent', contents, config });
    const cand = first.candidates[0];
    assert.equal(cand.finishReason, 'STOP');
    assert.equal(cand.content.role, 'model');
    assert.equal(first.text, 'Let me check.');
    const calls = first.functionCalls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'weather.get');
    assert.deepEqual(calls[0].args, {});
    assert.ok(first.usageMetadata.totalTokenCount >= 0);
    const up = await lastUpstream();
    assert.equal(up.path, '/v1/chat/completions');
    assert.equal(up.body.messages[0].role, 'system');
    assert.equal(up.body.messages[0].content, 'Be brief.');
    assert.equal(up.body.tools[0].function.parameters.properties.city.type, 'string');
    contents.push(cand.content, responsesFor(calls, false));
    const second = await ai.models.generateContent({ model: 'mock-agent', contents, config });
    assert.equal(second.candidates[0].finishReason, 'STOP');
    assert.match(second.text, /^result: .*sunny/);
    assert.equal(second.functionCalls, undefined);
  });

  test(`@google/genai generateContentStream loop via ${route || '/'}: chunks, calls with ids sent back`, async () => {
    const ai = client(route, { 'X-Mock-Say': 'Checking.' });
    const contents = [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }];
    const config = { tools, thinkingConfig: { thinkingBudget: 2048 } };
    const parts = [];
    let finish;
    for await (const chunk of await ai.models.generateContentStream({ model: 'mock-agent', contents, config })) {
      parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    assert.equal(finish, 'STOP');
    const calls = parts.filter((p) => p.functionCall).map((p) => p.functionCall);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'weather.get');
    assert.ok(calls[0].id, 'the call carries the chat call id');
    assert.equal(parts.filter((p) => p.text).map((p) => p.text).join(''), 'Checking.');
    contents.push({ role: 'model', parts }, responsesFor(calls, true));
    let text = '';
    for await (const chunk of await ai.models.generateContentStream({ model: 'mock-agent', contents, config })) {
      text += chunk.text ?? '';
    }
    assert.match(text, /^result: .*sunny/);
  });
}

test('@google/genai on a strict Gemini upstream: a Gemini 3 call\'s thoughtSignature goes out and comes back', async () => {
  const ai = client('/gstrict');
  const contents = [{ role: 'user', parts: [{ text: 'MOCK_CALL weather.get city=Paris' }] }];
  const parts = [];
  for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-3-flash-preview', contents, config: { tools } })) {
    parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
  }
  const call = parts.find((p) => p.functionCall);
  assert.ok(call, 'a functionCall part');
  assert.deepEqual(call.functionCall.args, { city: 'Paris' });
  assert.ok(call.thoughtSignature, 'the call is signed');
  contents.push({ role: 'model', parts }, {
    role: 'user',
    parts: [{ functionResponse: { name: 'weather.get', response: { output: 'sunny' } } }],
  });
  const second = await ai.models.generateContent({ model: 'gemini-3-flash-preview', contents, config: { tools } });
  assert.match(second.text, /MOCK_RESULT: .*sunny/);
  const up = await lastUpstream();
  const asked = up.body.messages.find((m) => m.tool_calls);
  assert.equal(asked.tool_calls[0].extra_content.google.thought_signature, call.thoughtSignature);
});

// A Gemini 3 multimodal function response: the image a tool returned rides
// in functionResponse.parts (Gemini CLI's read_file of an image sends it so
// for gemini-3 models). A chat tool message holds text only: the image goes
// in the user message after it, the tool text pointing there; the model
// sees its bytes (the mock's MOCK_SEEN finds the token in them). It was
// left out without a word.
test('@google/genai on a strict Gemini upstream: an image in functionResponse.parts reaches the model', async () => {
  const ai = client('/gstrict');
  const contents = [{ role: 'user', parts: [{ text: 'Look at the picture. MOCK_CALL weather.get city=Paris' }] }];
  const first = await ai.models.generateContent({ model: 'gemini-3-flash-preview', contents, config: { tools } });
  const call = first.functionCalls[0];
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from(' tok-frparts-7f3a ')]).toString('base64');
  contents.push(first.candidates[0].content, {
    role: 'user',
    parts: [createPartFromFunctionResponse(call.id, call.name, { output: 'Binary content provided (1 item(s)).' },
      [createFunctionResponsePartFromBase64(png, 'image/png')])],
  });
  const second = await ai.models.generateContent({ model: 'gemini-3-flash-preview', contents, config: { tools } });
  assert.match(second.text, /MOCK_RESULT: .*Binary content provided/);
  assert.match(second.text, /MOCK_SEEN: tok-frparts-7f3a/);
  const up = await lastUpstream();
  const tool = up.body.messages.find((m) => m.role === 'tool');
  assert.match(tool.content, /image: see the next user message/);
  const after = up.body.messages[up.body.messages.indexOf(tool) + 1];
  assert.equal(after.role, 'user');
  assert.ok(after.content.some((p) => p.type === 'image_url' && p.image_url.url === `data:image/png;base64,${png}`));
});

test('@google/genai errors come in Gemini\'s shape', async () => {
  const ai = client('/gemini');
  await assert.rejects(
    ai.models.generateContent({ model: 'mock-agent', contents: [{ role: 'user', parts: [{ functionCall: {} }] }, { role: 'model', parts: [{ functionCall: { args: {} } }] }] }),
    (e) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 400);
      const body = JSON.parse(e.message);
      assert.equal(body.error.code, 400);
      assert.equal(body.error.status, 'INVALID_ARGUMENT');
      assert.match(body.error.message, /functionCall/);
      return true;
    },
  );
});

test('@google/genai countTokens is an estimate, said as such', async () => {
  const r = await fetch(`${root()}/gemini/v1beta/models/mock-agent:countTokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': API_KEY },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x'.repeat(400) }] }] }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('x-toolgate-estimate'), /countTokens/);
  const ai = client('/gemini');
  const c = await ai.models.countTokens({ model: 'mock-agent', contents: 'x'.repeat(400) });
  assert.ok(c.totalTokens >= 100 && c.totalTokens < 200, `totalTokens ${c.totalTokens}`);
});

test('streamGenerateContent without alt=sse is one JSON array of responses', async () => {
  const r = await fetch(`${root()}/gemini/v1beta/models/mock-agent:streamGenerateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': API_KEY, 'x-mock-say': 'Hi.' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }], tools }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /application\/json/);
  const all = await r.json();
  assert.ok(Array.isArray(all) && all.length >= 2);
  assert.equal(all.at(-1).candidates[0].finishReason, 'STOP');
  assert.ok(all.some((x) => x.candidates[0].content.parts.some((p) => p.functionCall?.name === 'weather.get')));
});

test('models list and a model in Gemini\'s shape', async () => {
  const ai = client('/gemini');
  const m = await ai.models.get({ model: 'mock-agent' });
  assert.equal(m.name, 'models/mock-agent');
  assert.ok(m.supportedActions.includes('generateContent'));
  const list = await (await fetch(`${root()}/v1beta/models`, { headers: { 'x-goog-api-key': API_KEY } })).json();
  assert.ok(Array.isArray(list.models));
});
