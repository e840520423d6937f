// surface.mjs -- the request and answer surface of the imitated APIs, read
// from the official SDKs' type definitions with the TypeScript compiler API.
//
// Each SURFACE names a type of an SDK's .d.ts, a path into it (properties,
// "[]" for an array's element; a union is followed into each member) and how
// its variants are told apart: by a discriminant property ("type", "role"),
// by the fields of an interface ("props": Gemini's Part has one field per
// kind) or by the members of an enum. enumerate() gives, for every surface,
// the keys the pinned SDK declares today ("responses.tool.web_search"), and
// type-checks each row's sample request against the SDK's request type, so
// that table.json can be held against them both ways: a declared key with
// no row fails the suite (an SDK update adds a type), and so does a row
// whose key the SDK no longer declares. Below the top, nestedUnions walks
// the request bodies (ROOTS) for every other union and enum a request can
// hold, so that what no surface enumerates is seen, not overlooked: each
// is a surface or named, with what covers it, in table.json's "nested".
// Read with the type checker, not
// with regexes: aliases, namespaces merged with types, `Shared.X` imports
// and literal unions are all resolved the way tsc resolves them.
//
// TypeScript is pinned at 6.x: 7.x is the native compiler, which has no
// JavaScript API.
import ts from 'typescript';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
// node_modules next to this file (the SDKs' "exports" hide package.json)
const HERE = path.dirname(new URL(import.meta.url).pathname);
const pkgDir = (name) => path.join(HERE, 'node_modules', name);

export const SDK_FILES = {
  openai_chat: () => path.join(pkgDir('openai'), 'resources/chat/completions/completions.d.ts'),
  openai_responses: () => path.join(pkgDir('openai'), 'resources/responses/responses.d.ts'),
  anthropic: () => path.join(pkgDir('@anthropic-ai/sdk'), 'resources/messages/messages.d.ts'),
  anthropic_beta: () => path.join(pkgDir('@anthropic-ai/sdk'), 'resources/beta/messages/messages.d.ts'),
  genai: () => path.join(pkgDir('@google/genai'), 'dist/genai.d.ts'),
};

// [id, file, type, path, how]; how: a property name ("type", "role"),
// "props" or "enum". The union of the answer's stream events is under
// "answer": true, the rest is the request surface.
export const SURFACES = [
  // Chat completions (openai)
  { id: 'chat.message', file: 'openai_chat', type: 'ChatCompletionMessageParam', by: 'role' },
  { id: 'chat.content.user', file: 'openai_chat', type: 'ChatCompletionUserMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'chat.content.system', file: 'openai_chat', type: 'ChatCompletionSystemMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'chat.content.developer', file: 'openai_chat', type: 'ChatCompletionDeveloperMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'chat.content.assistant', file: 'openai_chat', type: 'ChatCompletionAssistantMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'chat.content.tool', file: 'openai_chat', type: 'ChatCompletionToolMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'chat.tool_call', file: 'openai_chat', type: 'ChatCompletionMessageToolCall', by: 'type' },
  { id: 'chat.tool', file: 'openai_chat', type: 'ChatCompletionTool', by: 'type' },
  { id: 'chat.custom_tool.format', file: 'openai_chat', type: 'ChatCompletionCustomTool', path: ['custom', 'format'], by: 'type' },
  { id: 'chat.tool_choice', file: 'openai_chat', type: 'ChatCompletionToolChoiceOption', by: 'type' },
  { id: 'chat.response_format', file: 'openai_chat', type: 'ChatCompletionCreateParamsBase', path: ['response_format'], by: 'type' },
  { id: 'chat.param', file: 'openai_chat', type: 'ChatCompletionCreateParamsBase', by: 'props' },
  { id: 'chat.chunk.delta', file: 'openai_chat', type: 'ChatCompletionChunk.Choice.Delta', by: 'props', answer: true },
  { id: 'chat.chunk.finish_reason', file: 'openai_chat', type: 'ChatCompletionChunk.Choice', path: ['finish_reason'], by: 'type', answer: true },
  // Responses (openai)
  { id: 'responses.param', file: 'openai_responses', type: 'ResponseCreateParamsBase', by: 'props' },
  { id: 'responses.input_item', file: 'openai_responses', type: 'ResponseInputItem', by: 'type' },
  { id: 'responses.input_content', file: 'openai_responses', type: 'ResponseInputContent', by: 'type' },
  { id: 'responses.output_content', file: 'openai_responses', type: 'ResponseOutputMessage', path: ['content', '[]'], by: 'type' },
  { id: 'responses.function_call_output', file: 'openai_responses', type: 'ResponseInputItem.FunctionCallOutput', path: ['output', '[]'], by: 'type' },
  { id: 'responses.reasoning_content', file: 'openai_responses', type: 'ResponseReasoningItem', path: ['summary', '[]'], by: 'type' },
  { id: 'responses.tool', file: 'openai_responses', type: 'Tool', by: 'type' },
  { id: 'responses.tool_choice', file: 'openai_responses', type: 'ResponseCreateParamsBase', path: ['tool_choice'], by: 'type' },
  { id: 'responses.text_format', file: 'openai_responses', type: 'ResponseFormatTextConfig', by: 'type' },
  { id: 'responses.include', file: 'openai_responses', type: 'ResponseIncludable', by: 'type' },
  // below the top (nestedUnions finds them; each kind is a row)
  { id: 'responses.annotation', file: 'openai_responses', type: 'ResponseOutputText', path: ['annotations', '[]'], by: 'type' },
  { id: 'responses.caller', file: 'openai_responses', type: 'ResponseFunctionToolCall', path: ['caller'], by: 'type' },
  { id: 'responses.custom_format', file: 'openai_responses', type: 'CustomTool', path: ['format'], by: 'type' },
  { id: 'responses.namespace_tool', file: 'openai_responses', type: 'NamespaceTool', path: ['tools', '[]'], by: 'type' },
  { id: 'responses.shell_environment', file: 'openai_responses', type: 'FunctionShellTool', path: ['environment'], by: 'type' },
  { id: 'responses.shell_outcome', file: 'openai_responses', type: 'ResponseFunctionShellCallOutputContent', path: ['outcome'], by: 'type' },
  { id: 'responses.patch_operation', file: 'openai_responses', type: 'ResponseInputItem.ApplyPatchCall', path: ['operation'], by: 'type' },
  { id: 'responses.function_field', file: 'openai_responses', type: 'FunctionTool', by: 'props' },
  { id: 'responses.event', file: 'openai_responses', type: 'ResponseStreamEvent', by: 'type', answer: true },
  { id: 'responses.output_item', file: 'openai_responses', type: 'ResponseOutputItem', by: 'type', answer: true },
  { id: 'responses.response', file: 'openai_responses', type: 'Response', by: 'props', answer: true },
  { id: 'responses.usage', file: 'openai_responses', type: 'ResponseUsage', by: 'props', answer: true },
  { id: 'responses.status', file: 'openai_responses', type: 'ResponseStatus', by: 'type', answer: true },
  // Messages (anthropic)
  { id: 'messages.param', file: 'anthropic', type: 'MessageCreateParamsBase', beta: 'MessageCreateParamsBase', by: 'props' },
  { id: 'messages.block', file: 'anthropic', type: 'ContentBlockParam', beta: 'BetaContentBlockParam', by: 'type' },
  { id: 'messages.tool_result', file: 'anthropic', type: 'ToolResultBlockParam', beta: 'BetaToolResultBlockParam', path: ['content', '[]'], by: 'type' },
  { id: 'messages.document_source', file: 'anthropic', type: 'DocumentBlockParam', beta: 'BetaRequestDocumentBlock', path: ['source'], by: 'type' },
  { id: 'messages.image_source', file: 'anthropic', type: 'ImageBlockParam', beta: 'BetaImageBlockParam', path: ['source'], by: 'type' },
  { id: 'messages.system', file: 'anthropic', type: 'MessageCreateParamsBase', beta: 'MessageCreateParamsBase', path: ['system', '[]'], by: 'type' },
  { id: 'messages.tool', file: 'anthropic', type: 'ToolUnion', beta: 'BetaToolUnion', by: 'type' },
  { id: 'messages.tool_choice', file: 'anthropic', type: 'ToolChoice', beta: 'BetaToolChoice', by: 'type' },
  { id: 'messages.thinking', file: 'anthropic', type: 'ThinkingConfigParam', beta: 'BetaThinkingConfigParam', by: 'type' },
  { id: 'messages.citation', file: 'anthropic', type: 'TextBlockParam', beta: 'BetaTextBlockParam', path: ['citations', '[]'], by: 'type' },
  { id: 'messages.effort', file: 'anthropic', type: 'OutputConfig', beta: 'BetaOutputConfig', path: ['effort'], by: 'type' },
  // below the top (nestedUnions finds them; each kind is a row)
  { id: 'messages.role', file: 'anthropic', type: 'MessageCreateParamsBase', beta: 'MessageCreateParamsBase', path: ['messages', '[]'], by: 'role' },
  { id: 'messages.document_content', file: 'anthropic', type: 'ContentBlockSource', beta: 'BetaContentBlockSource', path: ['content', '[]'], by: 'type' },
  { id: 'messages.caller', file: 'anthropic', type: 'ToolUseBlockParam', beta: 'BetaToolUseBlockParam', path: ['caller'], by: 'type' },
  { id: 'messages.system_content', file: 'anthropic_beta', type: 'BetaSystemMessageParam', path: ['content', '[]'], by: 'type' },
  { id: 'messages.tool_change', file: 'anthropic_beta', type: 'BetaRequestToolAdditionBlock', path: ['tool'], by: 'type' },
  { id: 'messages.tool_field', file: 'anthropic', type: 'Tool', beta: 'BetaTool', by: 'props' },
  { id: 'messages.event', file: 'anthropic', type: 'RawMessageStreamEvent', beta: 'BetaRawMessageStreamEvent', by: 'type', answer: true },
  { id: 'messages.delta', file: 'anthropic', type: 'RawContentBlockDelta', beta: 'BetaRawContentBlockDelta', by: 'type', answer: true },
  { id: 'messages.content_block', file: 'anthropic', type: 'ContentBlock', beta: 'BetaContentBlock', by: 'type', answer: true },
  { id: 'messages.message', file: 'anthropic', type: 'Message', beta: 'BetaMessage', by: 'props', answer: true },
  { id: 'messages.usage', file: 'anthropic', type: 'Usage', beta: 'BetaUsage', by: 'props', answer: true },
  { id: 'messages.stop_reason', file: 'anthropic', type: 'StopReason', beta: 'BetaStopReason', by: 'type', answer: true },
  // Gemini (@google/genai)
  { id: 'gemini.generation_config', file: 'genai', type: 'GenerationConfig', by: 'props' },
  // the SDK's config is generationConfig's fields flattened beside the
  // body's own (systemInstruction, safetySettings, ...): those, and the
  // SDK's own options, are the fields not in GenerationConfig
  { id: 'gemini.config', file: 'genai', type: 'GenerateContentConfig', by: 'props', minus: 'gemini.generation_config' },
  { id: 'gemini.part', file: 'genai', type: 'Part', by: 'props' },
  { id: 'gemini.tool', file: 'genai', type: 'Tool', by: 'props' },
  { id: 'gemini.function_calling_mode', file: 'genai', type: 'FunctionCallingConfigMode', by: 'enum' },
  { id: 'gemini.schema', file: 'genai', type: 'Schema', by: 'props' },
  { id: 'gemini.type', file: 'genai', type: 'Type', by: 'enum' },
  { id: 'gemini.tool_config', file: 'genai', type: 'ToolConfig', by: 'props' },
  { id: 'gemini.function_calling_config', file: 'genai', type: 'FunctionCallingConfig', by: 'props' },
  { id: 'gemini.thinking_config', file: 'genai', type: 'ThinkingConfig', by: 'props' },
  { id: 'gemini.thinking_level', file: 'genai', type: 'ThinkingLevel', by: 'enum' },
  { id: 'gemini.function_declaration', file: 'genai', type: 'FunctionDeclaration', by: 'props' },
  { id: 'gemini.function_call', file: 'genai', type: 'FunctionCall', by: 'props' },
  { id: 'gemini.function_response', file: 'genai', type: 'FunctionResponse', by: 'props' },
  { id: 'gemini.function_response_part', file: 'genai', type: 'FunctionResponsePart', by: 'props' },
  { id: 'gemini.scheduling', file: 'genai', type: 'FunctionResponseScheduling', by: 'enum' },
  { id: 'gemini.behavior', file: 'genai', type: 'Behavior', by: 'enum' },
  { id: 'gemini.response', file: 'genai', type: 'GenerateContentResponse', by: 'props', answer: true },
  { id: 'gemini.candidate', file: 'genai', type: 'Candidate', by: 'props', answer: true },
  { id: 'gemini.usage', file: 'genai', type: 'GenerateContentResponseUsageMetadata', by: 'props', answer: true },
  { id: 'gemini.finish_reason', file: 'genai', type: 'FinishReason', by: 'enum', answer: true },
];

// Answer objects of no union whose required properties are checked too
// (required[id][""]): the chat stream's chunks and their choices, and the
// usage objects the answers end with.
export const REQUIRED_OF = [
  ['chat.chunk', 'openai_chat', 'ChatCompletionChunk'],
  ['chat.chunk.choice', 'openai_chat', 'ChatCompletionChunk.Choice'],
  ['responses.usage', 'openai_responses', 'ResponseUsage'],
  ['responses.usage.input_tokens_details', 'openai_responses', 'ResponseUsage.InputTokensDetails'],
  ['responses.usage.output_tokens_details', 'openai_responses', 'ResponseUsage.OutputTokensDetails'],
  ['messages.usage', 'anthropic', 'Usage'],
  ['responses.response', 'openai_responses', 'Response'],
  ['messages.message', 'anthropic', 'Message'],
];

// The request bodies the nested walk (nestedUnions) starts from: every
// union below them that toolgate must read is either one of SURFACES or
// named in table.json's "nested" with what covers it.
export const ROOTS = [
  ['chat', 'openai_chat', 'ChatCompletionCreateParamsBase'],
  ['responses', 'openai_responses', 'ResponseCreateParamsBase'],
  ['messages', 'anthropic', 'MessageCreateParamsBase'],
  ['messages', 'anthropic_beta', 'MessageCreateParamsBase'],
  ['gemini', 'genai', 'Content'],
  ['gemini', 'genai', 'Tool'],
  ['gemini', 'genai', 'ToolConfig'],
  ['gemini', 'genai', 'GenerationConfig'],
  ['gemini', 'genai', 'SafetySetting'],
];

function findSymbol(checker, sf, dotted) {
  let sym = checker.getSymbolAtLocation(sf);
  let table = sym ? checker.getExportsOfModule(sym) : [];
  for (const [i, name] of dotted.split('.').entries()) {
    sym = table.find((s) => s.name === name);
    if (!sym) throw new Error(`${dotted}: no ${name}`);
    if (sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
    if (i < dotted.split('.').length - 1) table = sym.exports ? [...sym.exports.values()] : [];
  }
  return sym;
}

const members = (t) => (t.isUnion() ? t.types : [t]);

// One step of a path: a property (of every object member of a union), or
// "[]", the element type of every array member (a "string | Array<X>" gives X).
function step(checker, type, part) {
  const out = [];
  for (const m of members(checker.getNonNullableType(type))) {
    if (part === '[]') {
      if (checker.isArrayType(m)) out.push(checker.getTypeArguments(m)[0]);
      else if (m.flags & ts.TypeFlags.StringLike && !(m.flags & ts.TypeFlags.StringLiteral)) out.push(m);
      continue;
    }
    const p = m.getProperty(part);
    if (p) out.push(checker.getTypeOfSymbol(p));
  }
  return out.flatMap((t) => members(checker.getNonNullableType(t)));
}

function keysOf(checker, types, by, label) {
  const keys = new Set();
  for (const t of types) {
    if (t.flags & ts.TypeFlags.StringLiteral) keys.add(t.value);
    else if (t.flags & ts.TypeFlags.String) keys.add('string');
    else if (t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)) continue;
    else if (by === 'props') {
      for (const p of checker.getPropertiesOfType(t)) {
        const pt = checker.getTypeOfSymbol(p);
        if (pt.getCallSignatures().length) continue; // methods and getters that compute
        keys.add(p.name);
      }
    } else {
      const p = t.getProperty(by);
      if (!p) throw new Error(`${label}: a member without "${by}": ${checker.typeToString(t)}`);
      const vals = members(checker.getNonNullableType(checker.getTypeOfSymbol(p)));
      for (const v of vals) {
        if (v.flags & ts.TypeFlags.StringLiteral) keys.add(v.value);
        else throw new Error(`${label}: "${by}" is not a literal in ${checker.typeToString(t)}`);
      }
    }
  }
  return [...keys];
}

// For a union of answer types told apart by `by`: each member's required
// (not optional) properties, { "response.completed": ["type", "response",
// "sequence_number"] }; the beta's members add theirs to the same key.
function requiredOf(checker, types, by) {
  const req = {};
  for (const t of types) {
    const p = t.getProperty?.(by);
    if (!p) continue;
    for (const v of members(checker.getNonNullableType(checker.getTypeOfSymbol(p)))) {
      if (!(v.flags & ts.TypeFlags.StringLiteral)) continue;
      const names = checker.getPropertiesOfType(t).filter((q) => !(q.flags & ts.SymbolFlags.Optional)).map((q) => q.name);
      req[v.value] = [...new Set([...(req[v.value] || []), ...names])];
    }
  }
  return req;
}

// A union's identity: its members' type ids (the checker interns types, so
// the same union is the same ids wherever it is reached), or an enum's name.
const sigOf = (objs) => objs.map((t) => t.id).sort((a, b) => a - b).join(',');
const tagOf = (checker, t, by) => {
  const p = t.getProperty?.(by);
  if (!p) return null;
  const vals = members(checker.getNonNullableType(checker.getTypeOfSymbol(p)));
  return vals.length && vals.every((v) => v.flags & ts.TypeFlags.StringLiteral) ? vals.map((v) => v.value) : null;
};
const enumOf = (t) => (t.flags & ts.TypeFlags.EnumLiteral || (t.isUnion() && t.types.every((x) => x.flags & ts.TypeFlags.EnumLiteral))
  ? (t.symbol?.flags & ts.SymbolFlags.Enum ? t.symbol : t.symbol?.parent) : null);

// Every union below the request roots (ROOTS) that the API tells apart by
// a member's "type" or "role" (at least two kinds), and every enum a field
// has (Gemini's), by where it is first reached: "ToolUseBlockParam.caller",
// "ResponseOutputText.annotations[]". Each with its keys and its identity
// (sig), to be held against SURFACES: what no surface enumerates is a gap
// unless table.json's "nested" says what covers it.
function nestedUnions(checker, program, files) {
  const found = new Map();
  const seen = new Set();
  const nameOf = (t, owner, prop) => {
    const n = checker.typeToString(t);
    return /^[A-Za-z_][\w.]*$/.test(n) ? n : `${owner}.${prop}`;
  };
  const visit = (api, type, owner, prop) => {
    const t = checker.getNonNullableType(type);
    const en = enumOf(t);
    if (en) {
      const id = `${owner}.${prop}`;
      if (!found.has(id)) found.set(id, { api, id, sig: `enum:${en.name}`, keys: [...en.exports.keys()] });
      return;
    }
    const objs = [];
    for (const m of members(t)) {
      if (checker.isArrayType(m)) visit(api, checker.getTypeArguments(m)[0], owner, `${prop}[]`);
      else if (m.flags & ts.TypeFlags.Object && !m.getCallSignatures().length) objs.push(m);
    }
    for (const by of ['type', 'role']) {
      const tagged = objs.filter((m) => tagOf(checker, m, by));
      const keys = [...new Set(tagged.flatMap((m) => tagOf(checker, m, by)))];
      if (tagged.length < 2 || keys.length < 2) continue;
      const id = `${owner}.${prop}`;
      if (!found.has(id)) found.set(id, { api, id, sig: sigOf(tagged), keys, by });
      break;
    }
    for (const m of objs) {
      if (seen.has(m.id)) continue;
      seen.add(m.id);
      const name = nameOf(m, owner, prop);
      for (const q of checker.getPropertiesOfType(m)) {
        const qt = checker.getTypeOfSymbol(q);
        if (!qt.getCallSignatures().length) visit(api, qt, name, q.name);
      }
    }
  };
  for (const [api, file, name] of ROOTS) {
    const t = checker.getDeclaredTypeOfSymbol(findSymbol(checker, program.getSourceFile(files[file]), name));
    for (const q of checker.getPropertiesOfType(t)) visit(api, checker.getTypeOfSymbol(q), name, q.name);
  }
  return [...found.values()];
}

// The type each API's sample requests must have, imported from the SDKs:
// a sample the SDK's own types reject (a misspelt field, a missing one) is
// not a request the API accepts, and would prove nothing. Gemini's REST body
// is the SDK's contents, tools, toolConfig, systemInstruction, safetySettings,
// cachedContent, labels, serviceTier, continuationToken, store and a
// generationConfig (with the config's imageConfig: the SDK flattens all but
// contents into `config`).
const SAMPLE_TYPES = `
import type { ChatCompletionCreateParams as ChatBody } from 'openai/resources/chat/completions/completions';
import type { ResponseCreateParams as ResponsesBody } from 'openai/resources/responses/responses';
import type { MessageCreateParams as MessagesBody } from '@anthropic-ai/sdk/resources/messages/messages';
import type { MessageCreateParams as BetaMessagesBody } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { Content, Tool, ToolConfig, GenerationConfig, GenerateContentConfig, ImageConfig, SafetySetting } from '@google/genai';
// the SDK's enums are nominal: a JSON sample spells their string values
type Loose<T> = T extends string ? \`\${T}\` : T extends object ? { [K in keyof T]: Loose<T[K]> } : T;
type GeminiBody = Loose<{
  contents: Content[]; tools?: Tool[]; toolConfig?: ToolConfig; systemInstruction?: Content;
  generationConfig?: GenerationConfig & { imageConfig?: ImageConfig }; safetySettings?: SafetySetting[]; cachedContent?: string; labels?: Record<string, string>;
  serviceTier?: GenerateContentConfig['serviceTier']; continuationToken?: string; store?: boolean;
}>;
`;
const SAMPLE_TYPE = { chat: 'ChatBody', responses: 'ResponsesBody', messages: 'MessagesBody', gemini: 'GeminiBody' };

function samplesSource(rows) {
  const lines = [SAMPLE_TYPES];
  const at = [];
  for (const r of rows || []) {
    if (!r.request) continue;
    const body = { ...r.request };
    if (r.api !== 'gemini') body.model = 'm';
    if (r.api === 'messages' && body.max_tokens === undefined) body.max_tokens = 256;
    at.push([lines.join('\n').split('\n').length, r.key]);
    const type = r.beta ? 'BetaMessagesBody' : SAMPLE_TYPE[r.api];
    lines.push(`export const r${at.length}: ${type} = ${JSON.stringify(body)};`);
  }
  return { text: lines.join('\n'), at };
}

// enumerate(rows): { surface: { surfaceId: [key, ...] }, sampleErrors:
// [[row key, message]], required, nested } for the pinned SDKs; rows (or
// rows(surface), when the rows are made from the surface: run.mjs's
// families) have their requests checked against the SDKs' request types, in
// a second program that reuses the first's files.
export function enumerate(rowsFor) {
  const files = Object.fromEntries(Object.entries(SDK_FILES).map(([k, f]) => [k, f()]));
  let samples = { text: '', at: [] };
  const samplesFile = path.join(HERE, '__samples__.ts');
  const options = {
    noEmit: true, skipLibCheck: true, types: [], target: ts.ScriptTarget.ES2022, strict: true,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (path.resolve(name) === samplesFile
    ? ts.createSourceFile(name, samples.text, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === samplesFile || fileExists(name);
  const sdkProgram = ts.createProgram(Object.values(files), options, host);
  const checker = sdkProgram.getTypeChecker();
  const program = sdkProgram;
  const out = {};
  const required = {};
  const sigs = new Map();  // a union's identity -> the surface that enumerates it
  for (const s of SURFACES) {
    const sf = program.getSourceFile(files[s.file]);
    const sym = findSymbol(checker, sf, s.type);
    let types;
    if (s.by === 'enum') {
      const keys = [];
      for (const m of sym.exports.values()) {
        const v = checker.getConstantValue(m.valueDeclaration);
        keys.push(typeof v === 'string' ? v : m.name);
      }
      out[s.id] = keys;
      sigs.set(`enum:${sym.name}`, s.id);
      continue;
    }
    const keys = new Set();
    const all = [];
    for (const [file, type] of [[s.file, s.type], ...(s.beta ? [['anthropic_beta', s.beta]] : [])]) {
      types = [checker.getDeclaredTypeOfSymbol(findSymbol(checker, program.getSourceFile(files[file]), type))];
      for (const part of s.path || []) types = types.flatMap((t) => step(checker, t, part));
      if (s.by !== 'props') types = types.flatMap((t) => members(t));
      keysOf(checker, types, s.by, s.id).forEach((k) => keys.add(k));
      if (s.by !== 'props') sigs.set(sigOf(types.filter((t) => t.flags & ts.TypeFlags.Object && tagOf(checker, t, s.by))), s.id);
      all.push(...types);
    }
    out[s.id] = [...keys].filter((k) => !(s.minus && out[s.minus].includes(k)));
    if (s.by !== 'props' && s.by !== 'enum') required[s.id] = requiredOf(checker, all, s.by);
  }
  const rows = typeof rowsFor === 'function' ? rowsFor(out) : rowsFor;
  samples = samplesSource(rows);
  const withSamples = ts.createProgram([...Object.values(files), samplesFile], options, host, sdkProgram);
  const sampleErrors = [];
  const sf = withSamples.getSourceFile(samplesFile);
  for (const d of [...withSamples.getSyntacticDiagnostics(sf), ...withSamples.getSemanticDiagnostics(sf)]) {
    const line = d.start === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line;
    const row = samples.at.find(([l]) => l === line);
    sampleErrors.push([row ? row[1] : `line ${line}`, ts.flattenDiagnosticMessageText(d.messageText, ' ').slice(0, 600)]);
  }
  for (const [id, file, type] of REQUIRED_OF) {
    const t = checker.getDeclaredTypeOfSymbol(findSymbol(checker, program.getSourceFile(files[file]), type));
    required[id] = { '': checker.getPropertiesOfType(t).filter((q) => !(q.flags & ts.SymbolFlags.Optional)).map((q) => q.name) };
  }
  const nested = nestedUnions(checker, program, files).map((u) => ({ ...u, surface: sigs.get(u.sig) || null }));
  return { surface: out, sampleErrors, required, nested, rows };
}

export function sdkVersions() {
  const v = (n) => require(path.join(pkgDir(n), 'package.json')).version;
  return { openai: v('openai'), '@anthropic-ai/sdk': v('@anthropic-ai/sdk'), '@google/genai': v('@google/genai'), typescript: ts.version };
}
