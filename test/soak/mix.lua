-- mix.lua -- wrk script for the soak: cycles through JSON answers, streams,
-- tool calls, upstream faults (500, garbage, reset), toolgate's own 4xx and
-- the Responses bridge (whole, streamed, an item_reference the item store
-- may or may not still hold) and the Messages bridge (whole, streamed), so
-- every path of the proxy runs many thousands of times.
local msg = '"messages":[{"role":"user","content":"hi","_marker":1}]'
local tools = '"tools":[{"type":"function","function":{"name":"read.file","description":"Read a file",' ..
  '"parameters":{"type":"object","properties":{"path":{"type":"string"},"n":{"type":["integer","null"]}},"required":["path"]}}}]'
local rtools = '"tools":[{"type":"function","name":"read.file","parameters":{"type":"object",' ..
  '"properties":{"path":{"type":"string"}},"required":["path"]}}]'
local mtools = '"tools":[{"name":"read.file","input_schema":{"type":"object",' ..
  '"properties":{"path":{"type":"string"}},"required":["path"]}}]'
local say = {["X-Mock"] = "tools", ["X-Mock-Say"] = "Reading it.", ["X-Mock-Think"] = "A file."}
local reqs = {
  {'{"model":"gpt-soak",' .. msg .. '}', {}},
  {'{"model":"gpt-soak","stream":true,' .. msg .. '}', {["X-Mock-Chunks"] = "8"}},
  {'{"model":"gpt-soak",' .. msg .. ',' .. tools .. '}', {["X-Mock"] = "tools"}},
  {'{"model":"gpt-soak","stream":true,' .. msg .. ',' .. tools .. '}', {["X-Mock"] = "tools"}},
  {'{"model":"gem-soak",' .. msg .. ',' .. tools .. '}', {["X-Mock"] = "tools"}},
  {'{"model":"gpt-soak",' .. msg .. '}', {["X-Mock"] = "status", ["X-Mock-Status"] = "500"}},
  {'{"model":"gpt-soak",' .. msg .. '}', {["X-Mock"] = "garbage"}},
  {'{"model":"gpt-soak","stream":true,' .. msg .. '}', {["X-Mock"] = "garbage"}},
  {'{"model":"gpt-soak","stream":true,' .. msg .. '}', {["X-Mock"] = "reset"}},
  {'{"model":"gpt-soak",' .. msg .. '}', {["X-Mock"] = "reset"}},
  {'{"model":"nowhere",' .. msg .. '}', {}},
  {'{"model":"gpt-soak",', {}},
  {'{"model":"gem-soak","input":"hi",' .. rtools .. '}', say, "/v1/responses"},
  {'{"model":"gem-soak","stream":true,"input":[{"role":"user","content":"hi"}],' .. rtools .. '}', say,
   "/v1/responses"},
  {'{"model":"gem-soak","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"msg_1_soak"}]}', {},
   "/v1/responses"},
  {'{"model":"gem-soak","max_tokens":100,"messages":[{"role":"user","content":"hi"}],' .. mtools .. '}', say,
   "/v1/messages"},
  {'{"model":"gem-soak","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}],' .. mtools .. '}',
   say, "/v1/messages"},
}
local i = 0
request = function()
  i = i + 1
  local r = reqs[(i % #reqs) + 1]
  local h = {["Content-Type"] = "application/json"}
  for k, v in pairs(r[2]) do h[k] = v end
  return wrk.format("POST", r[3] or "/v1/chat/completions", h, r[1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("soak: %d requests, %d socket errors (connect %d, read %d, write %d, timeout %d), %d non-2xx\n",
    summary.requests, e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout, e.status))
end
