-- post.lua -- wrk script: POST the file named by $BODY (JSON) to the URL's
-- path, with any extra headers from $HEADERS ("K: V|K2: V2"). done() prints
-- one machine-readable line that bench/run.sh parses (latencies in µs).
local path = os.getenv("BODY")
local f = assert(io.open(path, "rb"), "cannot open BODY " .. tostring(path))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local extra = os.getenv("HEADERS") or ""
for k, v in string.gmatch(extra, "([^:|]+):%s*([^|]+)") do
  wrk.headers[k] = v
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d rps=%.0f p50=%d p99=%d max=%d errors=%d non2xx=%d secs=%.2f\n",
    summary.requests, summary.requests / secs,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status, secs))
end
