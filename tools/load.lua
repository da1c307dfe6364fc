-- wrk script for tools/load. The phase comes from the environment (LOAD_PHASE: health,
-- append or read), with LOAD_USERS (users u0000… seeded with device d1) and LOAD_TOKEN
-- (the bearer token: kept out of the command line). Each request picks a user at random,
-- so appends spread over streams and reads over projections. Non-2xx answers are counted
-- here (wrk's own count lumps 3xx with 2xx) and the summary is printed as one JSON line.
local phase = os.getenv("LOAD_PHASE") or "health"
local users = tonumber(os.getenv("LOAD_USERS") or "1000")
local token = os.getenv("LOAD_TOKEN") or ""
local headers = { ["Authorization"] = "Bearer " .. token }

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
  math.randomseed(id * 7919 + os.time())
end

local function userPath()
  return string.format("/v1/users/u%04d/devices", math.random(0, users - 1))
end

function request()
  if phase == "append" then
    return wrk.format("POST", userPath() .. "/d1/access", headers, "")
  elseif phase == "read" then
    return wrk.format("GET", userPath(), headers)
  else
    return wrk.format("GET", "/health", headers)
  end
end

function response(status, hdrs, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("non2xx") end
  local e = summary.errors
  io.write(string.format(
    'LOAD_RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"non_2xx":%d,"socket_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    bad, e.connect + e.read + e.write, e.timeout))
end
