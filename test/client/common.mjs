// common.mjs -- shared setup for the real-client tests.
//
// Every test talks to TG_BASE_URL (e.g. http://127.0.0.1:PORT/v1), which
// test/integration/clients.sh points at toolgate in front of the mock
// upstream. Model "mock-tools" makes the mock answer with one call of the
// first declared tool (id call_mock1, arguments "{}").
import assert from 'node:assert/strict';

export function baseURL() {
  const url = process.env.TG_BASE_URL;
  assert.ok(url, 'TG_BASE_URL must be set (e.g. http://127.0.0.1:8080/v1)');
  return url.replace(/\/+$/, '');
}

// A key the proxy forwards or replaces; the mock accepts anything.
export const API_KEY = process.env.TG_API_KEY || 'sk-client-test';

export const weatherParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name' },
    unit: { type: 'string', enum: ['c', 'f'] },
  },
  required: ['city'],
};

// An AI SDK agent loop, streamed: streamText until the model stops calling
// tools (at most `steps` steps), its text stream drained. Fails on any error
// the SDK reports; returns the text and the steps for the caller to check.
export async function streamAgentLoop(streamText, stepCountIs, options, steps = 4) {
  const errors = [];
  const r = streamText({
    stopWhen: stepCountIs(steps),
    maxRetries: 0,
    ...options,
    onError: ({ error }) => errors.push(error),
  });
  let text = '';
  for await (const d of r.textStream) text += d;
  assert.deepEqual(errors.map(String), []);
  return { text, steps: await r.steps };
}
