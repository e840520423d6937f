// run.mjs -- the conformance suite's runner (TAP on stdout).
//
// Holds table.json against the surface the pinned SDKs declare
// (surface.mjs; its families made into rows first, its nested unions each
// a surface or named), renders docs/conformance.md from both, and, with a
// toolgate in front of the mock's strict validators (conformance.sh
// starts them), sends every request row through each bridged route and
// every answer fixture through each bridge, streamed, read with the SDKs'
// own stream helpers. One TAP line per row: a row's result is the same
// question on every route (no 400 where the API accepts, the outcome the
// row declares, or the one its `on` gives a route), and a row the table marks `todo` (a gap another change is
// closing) is a TAP "# TODO" line, counted neither way by test/run.sh.
//
//   node run.mjs            the whole suite (TG_URL, MOCK_URL, TG_ROUTES set)
//   node run.mjs --surface  only the table against the SDKs and the docs
//   node run.mjs --write    rewrites docs/conformance.md from the table
//   TG_CONFORM_ONLY=substr  only the rows whose key contains substr
//   TG_CONFORM_DUMP=file    writes what each route answered and which events
//                           each answer gave (JSON), to write a new row from
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { enumerate, sdkVersions, SURFACES } from './surface.mjs';
import { renderDocs } from './docs.mjs';

const HERE = path.dirname(new URL(import.meta.url).pathname);
const ROOT = path.resolve(HERE, '../..');
const DOCS = path.join(ROOT, 'docs/conformance.md');
const table = JSON.parse(fs.readFileSync(path.join(HERE, 'table.json'), 'utf8'));
const args = process.argv.slice(2);

let n = 0;
let failed = 0;
const tap = (pass, name, detail, todo) => {
  n++;
  if (!pass && !todo) failed++;
  const mark = todo ? ` # TODO ${todo}${pass ? ' (passes now: remove the TODO)' : ''}` : '';
  console.log(`${pass ? 'ok' : 'not ok'} ${n} - ${name}${mark}`);
  if (!pass && detail) console.log(String(detail).split('\n').slice(0, 12).map((l) => `#   ${l}`).join('\n'));
};

// ---- the table against the SDKs ---------------------------------------------

// Families: one request template for each key of a surface ("$KEY" in its
// strings; `except` gives a key its own fields), so that a key an SDK
// update adds is a row, a sample type-checked against the SDK and a
// request through every route at once, not a gap until someone writes it.
// A hand-written row for the key wins.
function expand(surf) {
  const rows = [...table.rows];
  const have = new Set(rows.map((r) => r.key));
  for (const [id, fam] of Object.entries(table.families || {})) {
    for (const k of surf[id] || []) {
      if (have.has(`${id}.${k}`)) continue;
      const sub = (v) => (typeof v === 'string' ? v.replaceAll('$KEY', k)
        : Array.isArray(v) ? v.map(sub)
          : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([a, b]) => [a, sub(b)])) : v);
      const { except, ...rest } = fam;
      rows.push({ key: `${id}.${k}`, ...sub(rest), ...(except?.[k] || {}) });
    }
  }
  return rows;
}
const { surface, sampleErrors, required, nested, rows: allRows } = enumerate(expand);
table.rows = allRows;
const rowsByKey = new Map();
for (const r of table.rows) {
  if (rowsByKey.has(r.key)) tap(false, `table: ${r.key} has one row`, 'a second row for it');
  rowsByKey.set(r.key, r);
}
const declared = new Set();
for (const s of SURFACES) {
  const keys = surface[s.id].map((k) => `${s.id}.${k}`);
  keys.forEach((k) => declared.add(k));
  const missing = keys.filter((k) => !rowsByKey.has(k));
  tap(missing.length === 0, `${s.id}: each of the ${keys.length} types the SDK declares has a row`,
    `no row for: ${missing.join(', ')}`);
}
const badSamples = new Map();
for (const [key, msg] of sampleErrors) badSamples.set(key, [...(badSamples.get(key) || []), msg]);
for (const r of table.rows.filter((x) => x.request)) {
  const errs = badSamples.get(r.key) || [];
  if (errs.length) tap(false, `${r.key}: the sample request has the SDK's request type`, errs.join('\n'));
}
tap(![...badSamples.keys()].some((k) => !rowsByKey.has(k)), 'the samples compile against the SDKs\' types',
  [...badSamples.entries()].filter(([k]) => !rowsByKey.has(k)).map(([k, v]) => `${k}: ${v.join(' ')}`).join('\n'));
// the unions below the request roots (surface.mjs nestedUnions): each is a
// surface, or table.json's "nested" says what covers it
for (const api of ['chat', 'responses', 'messages', 'gemini']) {
  const gaps = nested.filter((u) => u.api === api && !u.surface && !table.nested?.[u.id]);
  tap(!gaps.length, `every union and enum below the ${api} request is a surface or named in table.json's nested`,
    gaps.map((u) => `${u.id}: ${u.keys.join(', ')}`).join('\n'));
}
const staleNested = Object.keys(table.nested || {}).filter((id) => !nested.some((u) => u.id === id && !u.surface));
tap(!staleNested.length, 'each of table.json\'s nested names a union the SDKs declare and no surface enumerates',
  `stale: ${staleNested.join(', ')}`);
const stale = table.rows.filter((r) => !declared.has(r.key)).map((r) => r.key);
tap(stale.length === 0, 'every row names a type the pinned SDKs still declare', `gone from the SDKs: ${stale.join(', ')}`);

const want = renderDocs(table, surface, sdkVersions(), nested);
if (args.includes('--write')) fs.writeFileSync(DOCS, want);
const have = fs.existsSync(DOCS) ? fs.readFileSync(DOCS, 'utf8') : '';
tap(have === want, 'docs/conformance.md is the table as it is (node test/conformance/run.mjs --write)',
  'docs/conformance.md is out of date');

if (args.includes('--surface') || args.includes('--write')) {
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}

// ---- requests ---------------------------------------------------------------

const TG = process.env.TG_URL;
const MOCK = process.env.MOCK_URL;
// "name=model name=model ...": the routes (prefixes) every row takes, each
// with the model its requests name
const ROUTES = (process.env.TG_ROUTES || '').split(/\s+/).filter(Boolean).map((s) => {
  const [name, model] = s.split('=');
  return { name, model };
});
const only = process.env.TG_CONFORM_ONLY || '';
const dump = { requests: {}, answers: {} };

const PATHS = {
  chat: () => '/v1/chat/completions',
  responses: () => '/v1/responses',
  messages: () => '/v1/messages',
  gemini: (model) => `/v1beta/models/${model}:generateContent`,
};
const HEADERS = {
  messages: { 'anthropic-version': '2023-06-01', 'x-api-key': 'dummy' },
  gemini: { 'x-goog-api-key': 'dummy' },
};

async function send(route, row) {
  const body = structuredClone(row.request);
  if (row.api !== 'gemini') body.model = route.model;
  if (row.api === 'messages' && body.max_tokens === undefined) body.max_tokens = 256;
  await fetch(`${MOCK}/_reset`, { method: 'POST' });
  // a beta row goes as the SDK's client.beta.messages sends it (Claude Code)
  const beta = row.beta ? { 'anthropic-beta': row.beta === true ? 'interleaved-thinking-2025-05-14' : row.beta } : {};
  const res = await fetch(`${TG}/${route.name}${PATHS[row.api](route.model)}${row.beta ? '?beta=true' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer dummy', ...(HEADERS[row.api] || {}), ...beta },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const last = await (await fetch(`${MOCK}/_last`)).json().catch(() => ({}));
  return {
    status: res.status,
    text,
    dropped: res.headers.get('x-toolgate-dropped') || '',
    translated: res.headers.get('x-toolgate-translated') || '',
    upstream: typeof last.body === 'string' ? last.body : '',
  };
}

// Each API's error body: OpenAI's {error: {message, type, param, code}},
// Anthropic's {type: "error", error: {type, message}}, Google's {error:
// {code, message, status}}.
const parse = (t) => { try { return JSON.parse(t); } catch { return null; } };
const ERROR_SHAPE = {
  chat: (t) => typeof parse(t)?.error?.message === 'string' && 'param' in parse(t).error,
  responses: (t) => typeof parse(t)?.error?.message === 'string' && 'param' in parse(t).error,
  messages: (t) => parse(t)?.type === 'error' && typeof parse(t).error?.message === 'string' && typeof parse(t).error.type === 'string',
  gemini: (t) => typeof parse(t)?.error?.code === 'number' && typeof parse(t).error.status === 'string',
};

// What is wrong with one answer, given the row (empty: nothing).
function judge(row, r) {
  const say = (s) => `${s} (status ${r.status}; dropped: "${r.dropped}"; translated: "${r.translated}")\n${r.text.slice(0, 400)}`;
  if (row.outcome === 'refused') {
    if (r.status !== 400) return say('the API refuses this: want 400');
    if (!ERROR_SHAPE[row.api](r.text)) return say(`want the ${row.api} API's own error shape`);
    return row.said && !r.text.includes(row.said) ? say(`want the error to name ${row.said}`) : '';
  }
  if (r.status !== 200) return say('the API accepts this: want 200');
  if (row.outcome === 'dropped' && !r.dropped.includes(row.said)) return say(`want "${row.said}" in X-Toolgate-Dropped`);
  // what is said to be dropped must not have gone up all the same
  const value = row.key.slice(row.key.lastIndexOf('.', row.key.length - 1) + 1);
  if (row.outcome === 'dropped' && r.upstream.includes(`"${value}"`))
    return say(`"${value}" reached the provider although dropped:\n${r.upstream.slice(0, 600)}`);
  if (row.outcome === 'translated' && row.said && !r.translated.includes(row.said) && !r.dropped.includes(row.said))
    return say(`want "${row.said}" in X-Toolgate-Translated`);
  if (row.outcome === 'carried' && row.said && r.dropped.includes(row.said)) return say(`"${row.said}" was dropped`);
  // every bridge: no image left inside a chat tool message (providers refuse
  // them there; issue 26), whatever the row
  if (row.api !== 'chat' && r.upstream) {
    const msgs = (() => { try { return JSON.parse(r.upstream).messages || []; } catch { return []; } })();
    if (msgs.some((m) => m.role === 'tool' && Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url')))
      return say(`an image part was left inside a chat tool message:\n${r.upstream.slice(0, 600)}`);
  }
  for (const s of row.upstream || [])
    if (!r.upstream.includes(s)) return say(`want ${s} in the request upstream:\n${r.upstream.slice(0, 600)}`);
  return '';
}

async function requestRows() {
  for (const row of table.rows) {
    if (!row.request || !row.key.includes(only)) continue;
    const problems = [];
    for (const route of ROUTES) {
      if (row.routes && !row.routes.includes(route.name)) continue;
      try {
        const r = await send(route, row);
        (dump.requests[row.key] ||= {})[route.name] = { status: r.status, dropped: r.dropped, translated: r.translated, text: r.status === 200 ? '' : r.text.slice(0, 300), upstream: r.upstream.slice(0, 3000) };
        const p = judge({ ...row, ...(row.on?.[route.name] || {}) }, r);
        if (p) problems.push(`${route.name}: ${p}`);
      } catch (e) {
        problems.push(`${route.name}: ${e.message}`);
      }
    }
    tap(problems.length === 0, `${row.key}: ${row.outcome}`, problems.join('\n'), row.todo);
  }
}

// ---- answers ----------------------------------------------------------------

// Each fixture is a chat stream the mock plays (X-Mock-Then: fixture); each
// bridge turns it into its API's events, read by the SDK's stream helper.
const { default: OpenAI } = await import('openai');
const { default: Anthropic } = await import('@anthropic-ai/sdk');
const { GoogleGenAI } = await import('@google/genai');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-conform-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function fixtureFile(name, fx) {
  const file = path.join(tmp, `${name}.sse`);
  const lines = fx.chunks.map((c) => `data: ${JSON.stringify({ id: 'chatcmpl-fx', object: 'chat.completion.chunk', created: 1, model: 'm', ...c })}\n\n`);
  fs.writeFileSync(file, lines.join('') + 'data: [DONE]\n\n');
  return file;
}

// The fields an SDK type requires that an answer's object lacks: for each
// streamed event, output item and content block, by the union it belongs
// to and its type (required: surface.mjs). Collected over every answer,
// one TAP line per API.
const lacking = { responses: new Set(), messages: new Set(), chat: new Set() };
function requireFields(api, union, obj, where) {
  const want = required[union]?.[obj?.type ?? ''];
  if (!want) return;
  for (const f of want) if (!(f in obj)) lacking[api].add(`${union}${obj.type ? `.${obj.type}` : ''} lacks ${f} (${where})`);
}

const STREAMS = {
  async responses(route, fx, headers) {
    const client = new OpenAI({ baseURL: `${TG}/${route.name}/v1`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
    const seen = [];
    const body = { model: route.model, input: 'hi', ...(fx.request?.responses || {}) };
    if (fx.error) {
      // the SDK's stream throws at the error event and reads no further: the
      // events are read raw here, to see the error and response.failed after it
      const res = await fetch(`${TG}/${route.name}/v1/responses`, {
        method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ ...body, stream: true }),
      });
      for (const line of (await res.text()).split('\n'))
        if (line.startsWith('data: ') && line !== 'data: [DONE]') seen.push(JSON.parse(line.slice(6)).type);
      return seen;
    }
    const stream = client.responses.stream(body);
    const where = `${fx.name}@${route.name}`;
    for await (const ev of stream) {
      seen.push(ev.type);
      requireFields('responses', 'responses.event', ev, where);
      if (ev.item) requireFields('responses', 'responses.output_item', ev.item, where);
      if (ev.part && ev.type.startsWith('response.content_part')) requireFields('responses', 'responses.output_content', ev.part, where);
    }
    const final = await stream.finalResponse();
    requireFields('responses', 'responses.response', final, where);
    requireFields('responses', 'responses.usage', final.usage, where);
    requireFields('responses', 'responses.usage.input_tokens_details', final.usage?.input_tokens_details, where);
    requireFields('responses', 'responses.usage.output_tokens_details', final.usage?.output_tokens_details, where);
    for (const it of final.output || []) {
      requireFields('responses', 'responses.output_item', it, where);
      if (it.type === 'message') for (const c of it.content || []) requireFields('responses', 'responses.output_content', c, where);
      if (it.type === 'reasoning') for (const c of it.summary || []) requireFields('responses', 'responses.reasoning_content', c, where);
    }
    return [...seen, ...answerFields('responses', final)];
  },
  async messages(route, fx, headers) {
    const client = new Anthropic({ baseURL: `${TG}/${route.name}`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
    const seen = [];
    const stream = client.messages.stream({ model: route.model, max_tokens: 256, messages: [{ role: 'user', content: 'hi' }], ...(fx.request?.messages || {}) });
    const where = `${fx.name}@${route.name}`;
    stream.on('streamEvent', (ev) => {
      seen.push(`event.${ev.type}`);
      requireFields('messages', 'messages.event', ev, where);
      if (ev.type === 'content_block_start') requireFields('messages', 'messages.content_block', ev.content_block, where);
      if (ev.type === 'content_block_delta') requireFields('messages', 'messages.delta', ev.delta, where);
      if (ev.type === 'content_block_delta') seen.push(`delta.${ev.delta.type}`);
      if (ev.type === 'content_block_start') seen.push(`content_block.${ev.content_block.type}`);
    });
    const final = await stream.finalMessage().catch((e) => { if (!fx.error) throw e; });
    for (const b of final?.content || []) requireFields('messages', 'messages.content_block', b, where);
    if (final) requireFields('messages', 'messages.usage', final.usage, where);
    if (final) requireFields('messages', 'messages.message', final, where);
    if (fx.error && !seen.length) throw new Error('no event before the error');
    return [...seen, ...answerFields('messages', final)];
  },
  // Gemini's stream, read with @google/genai's generateContentStream: each
  // response's fields, its usageMetadata's and each candidate's finishReason
  async gemini(route, fx, headers) {
    const ai = new GoogleGenAI({ apiKey: 'dummy', httpOptions: { baseUrl: `${TG}/${route.name}`, headers } });
    const seen = [];
    const stream = await ai.models.generateContentStream({
      model: route.model, contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...(fx.request?.gemini || {}),
    });
    for await (const r of stream) {
      for (const k of Object.keys(r)) if (r[k] !== undefined && k !== 'sdkHttpResponse') seen.push(`@gemini.response.${k}`);
      for (const k of Object.keys(r.usageMetadata || {})) seen.push(`@gemini.usage.${k}`);
      for (const c of r.candidates || []) if (c.finishReason) seen.push(`@gemini.finish_reason.${c.finishReason}`);
      for (const c of r.candidates || []) for (const k of Object.keys(c)) if (c[k] !== undefined) seen.push(`@gemini.candidate.${k}`);
    }
    return seen;
  },
  async chat(route, fx, headers) {
    const client = new OpenAI({ baseURL: `${TG}/${route.name}/v1`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
    const seen = [];
    const stream = client.chat.completions.stream({ model: route.model, messages: [{ role: 'user', content: 'hi' }], ...(fx.request?.chat || {}) });
    const where = `${fx.name}@${route.name}`;
    for await (const ch of stream) {
      requireFields('chat', 'chat.chunk', ch, where);
      for (const c of ch.choices || []) {
        requireFields('chat', 'chat.chunk.choice', c, where);
        for (const [k, v] of Object.entries(c.delta || {})) if (v !== null && v !== undefined) seen.push(`delta.${k}`);
        if (c.finish_reason) seen.push(`finish_reason.${c.finish_reason}`);
      }
    }
    await stream.finalChatCompletion().catch((e) => { if (!fx.error) throw e; });
    return seen;
  },
};
const PREFIX = { responses: 'responses.event.', messages: 'messages.', chat: 'chat.chunk.', gemini: 'gemini.' };

// The answer object the SDK's helper gives at the end (the Response, the
// Message): its fields, its usage's fields, its output items' types, its
// status or stop_reason, as full keys ("@responses.usage.total_tokens"),
// against the props surfaces (responses.response, messages.usage, ...). A
// field is there when the object has it, null or not: the types declare
// null where the API sends null. output_parsed and parsed_output are the
// helpers' own; store is in OpenAI's Responses (and toolgate's) though the
// SDK's Response type no longer declares it.
const NOT_THE_API = new Set(['output_parsed', 'parsed_output', 'store']);
function answerFields(api, obj) {
  if (!obj) return [];
  const keys = (o, id) => Object.keys(o || {}).filter((k) => o[k] !== undefined && !NOT_THE_API.has(k)).map((k) => `@${id}.${k}`);
  if (api === 'responses')
    return [...keys(obj, 'responses.response'), ...keys(obj.usage, 'responses.usage'),
      `@responses.status.${obj.status}`, ...(obj.output || []).map((it) => `@responses.output_item.${it.type}`)];
  return [...keys(obj, 'messages.message'), ...keys(obj.usage, 'messages.usage'),
    ...(obj.stop_reason ? [`@messages.stop_reason.${obj.stop_reason}`] : [])];
}
const keyOf = (api, t) => (t.startsWith('@') ? t.slice(1) : PREFIX[api] + t);

// The fixture's chunks as one chat.completion, for the whole (not
// streamed) answers: what a provider answers the same turn unstreamed.
function wholeOf(fx) {
  const msg = { role: 'assistant', content: '' };
  let finish = null;
  let usage;
  const calls = [];
  for (const c of fx.chunks) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices || []) {
      const d = ch.delta || {};
      if (d.content) msg.content += d.content;
      if (d.reasoning_content) msg.reasoning_content = (msg.reasoning_content || '') + d.reasoning_content;
      if (d.refusal) msg.refusal = (msg.refusal || '') + d.refusal;
      for (const tc of d.tool_calls || []) {
        const at = (calls[tc.index ?? 0] ||= { id: tc.id, type: tc.type || 'function', function: { name: '', arguments: '' } });
        if (tc.function?.name) at.function.name += tc.function.name;
        if (tc.function?.arguments) at.function.arguments += tc.function.arguments;
        if (tc.custom) at.custom = tc.custom;
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  if (calls.length) msg.tool_calls = calls;
  if (!msg.content && calls.length) msg.content = null;
  return { id: 'chatcmpl-fx', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: msg, finish_reason: finish }], ...(usage ? { usage } : {}) };
}

// Each fixture unstreamed through the Responses and Messages bridges: the
// whole Response and Message hold every field their SDK types require.
async function wholeAnswers() {
  for (const [name, fx] of Object.entries(table.answers)) {
    if (fx.error) continue;
    const file = path.join(tmp, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(wholeOf(fx)));
    const headers = { 'X-Mock-Then': 'fixture', 'X-Mock-Fixture': file };
    for (const route of ROUTES) {
      const where = `${name} whole@${route.name}`;
      if (fx.apis.includes('responses')) {
        const client = new OpenAI({ baseURL: `${TG}/${route.name}/v1`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
        try {
          const r = await client.responses.create({ model: route.model, input: 'hi', ...(fx.request?.responses || {}) });
          requireFields('responses', 'responses.response', r, where);
          requireFields('responses', 'responses.usage', r.usage, where);
          for (const it of r.output || []) requireFields('responses', 'responses.output_item', it, where);
        } catch (e) { lacking.responses.add(`${where}: ${e.message}`); }
      }
      if (fx.apis.includes('messages')) {
        const client = new Anthropic({ baseURL: `${TG}/${route.name}`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
        try {
          const m = await client.messages.create({ model: route.model, max_tokens: 256, messages: [{ role: 'user', content: 'hi' }], ...(fx.request?.messages || {}) });
          requireFields('messages', 'messages.message', m, where);
          requireFields('messages', 'messages.usage', m.usage, where);
          for (const b of m.content || []) requireFields('messages', 'messages.content_block', b, where);
        } catch (e) { lacking.messages.add(`${where}: ${e.message}`); }
      }
    }
  }
}

async function answerRows() {
  await wholeAnswers();
  const seen = { responses: new Map(), messages: new Map(), chat: new Map(), gemini: new Map() };
  for (const [name, fx] of Object.entries(table.answers)) {
    const headers = { 'X-Mock-Then': 'fixture', 'X-Mock-Fixture': fixtureFile(name, fx) };
    fx.name = name;
    for (const api of fx.apis) {
      const problems = [];
      for (const route of ROUTES) {
        let types = [];
        try {
          types = await STREAMS[api](route, fx, headers);
        } catch (e) {
          problems.push(`${route.name}: ${e.message}`);
        }
        dump.answers[`${name}/${api}/${route.name}`] = types;
        for (const t of types) {
          const key = keyOf(api, t);
          if (!seen[api].has(key)) seen[api].set(key, new Set());
          seen[api].get(key).add(`${name}@${route.name}`);
        }
      }
      tap(!problems.length, `answer ${name} through the ${api} bridge parses with the SDK's stream helper`, problems.join('\n'));
    }
  }
  for (const api of Object.keys(lacking))
    tap(!lacking[api].size, `every event, item, block, chunk and usage of the ${api} answers has each field its SDK type requires`,
      [...lacking[api]].join('\n'));
  for (const api of Object.keys(seen)) {
    const odd = [...seen[api].keys()].filter((k) => !declared.has(k));
    tap(odd.length === 0, `every event the ${api} bridge emitted is a type the SDK declares`, `undeclared: ${odd.join(', ')}`);
  }
  for (const row of table.rows) {
    if (row.request || !row.key.includes(only)) continue;
    const api = Object.keys(PREFIX).find((a) => row.key.startsWith(`${a}.`));
    const got = seen[api].get(row.key) || new Set();
    let problem = '';
    const missing = ROUTES.filter((r) => !got.has(`${row.via}@${r.name}`)).map((r) => r.name);
    if (row.outcome === 'emitted' && missing.length)
      problem = `not emitted for answer ${row.via} on ${missing.join(', ')}; seen for: ${[...got].join(', ') || 'none'}`;
    if (row.outcome === 'never' && got.size) problem = `emitted, for answers ${[...got].join(', ')}: the row says never`;
    tap(!problem, `${row.key}: ${row.outcome}${row.via ? ` (answer ${row.via})` : ''}`, problem, row.todo);
  }
}

await requestRows();
await answerRows();
if (process.env.TG_CONFORM_DUMP) fs.writeFileSync(process.env.TG_CONFORM_DUMP, JSON.stringify(dump, null, 1));
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
