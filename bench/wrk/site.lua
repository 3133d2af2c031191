-- wrk script of the site benchmark (bench/site.py sets everything through the environment).
--
-- SR_MODE        "get" (the same URL every time, each request with the next identity's
--                cookies), "post" (a form POST per request)
-- SR_METHOD      GET or POST
-- SR_HEADERS     extra headers, one "Name: value" a line
-- SR_IDENTITIES  "cookie<TAB>csrf token" a line: requests rotate over these logged-in buyers
--                (GET and POST rows alike: consecutive requests carry different sessions)
-- SR_BODY        the form body; {token} {room} {date} {hour} {hour_end} {box} {uid} are filled in
-- SR_SLOTS       "distinct": every request asks for a slot no other request asks for
--                (class C boxes SR_BOX_FIRST.. that the data set leaves free); "fixed": the
--                slot in SR_BODY as it is; "race": SR_RACERS consecutive requests (different
--                buyers, in flight together) ask for the same fresh slot, then the next
--                slot: one wins, the others are refused (the contended row)
-- SR_DAYS        comma list of bookable dates; SR_ROOMS the number of rooms
-- SR_SLOT_START  where this run's slot sequence starts (runs never reuse a slot)
--
-- done() prints one line "SRJSON {...}" with the summary, p50/p99 and the status classes.

local mode = os.getenv("SR_MODE") or "get"
local method = os.getenv("SR_METHOD") or "GET"
local body_template = os.getenv("SR_BODY") or ""
local slots = os.getenv("SR_SLOTS") or "fixed"
local rooms = tonumber(os.getenv("SR_ROOMS") or "1")
local box_first = tonumber(os.getenv("SR_BOX_FIRST") or "51")
local box_count = tonumber(os.getenv("SR_BOX_COUNT") or "50")
local slot_start = tonumber(os.getenv("SR_SLOT_START") or "0")
local racers = tonumber(os.getenv("SR_RACERS") or "8")
-- An error status that is the expected answer of the row (409 on the contended slot).
expected_error = tonumber(os.getenv("SR_EXPECTED_ERROR") or "0")

local days = {}
for day in (os.getenv("SR_DAYS") or ""):gmatch("[^,]+") do
  days[#days + 1] = day
end

local headers = {}
for line in (os.getenv("SR_HEADERS") or ""):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then
    headers[name] = value
  end
end

local identities = {}
for line in (os.getenv("SR_IDENTITIES") or ""):gmatch("[^\n]+") do
  local cookie, token = line:match("^([^\t]*)\t(.*)$")
  identities[#identities + 1] = { cookie = cookie, token = token }
end

local alphabet = "abcdefghijklmnopqrstuvwxyz234567"
local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = slot_start + (thread_index or 0) * 250000
  first = counter
  math.randomseed(os.time() * 1000 + (thread_index or 0))
  s1, s2, s3, s4, s5 = 0, 0, 0, 0, 0
  wrk.method = method
  for name, value in pairs(headers) do
    wrk.headers[name] = value
  end
end

local function uid()
  local chars = {}
  for i = 1, 26 do
    local n = math.random(1, 32)
    chars[i] = alphabet:sub(n, n)
  end
  return table.concat(chars)
end

local function pad3(n)
  return string.format("%03d", n)
end

local function slot_values(values, n)
  local box = box_first + n % box_count
  local hour = math.floor(n / box_count) % 24
  local room = 1 + math.floor(n / (box_count * 24)) % rooms
  local day = days[1 + math.floor(n / (box_count * 24 * rooms)) % #days]
  values.room = pad3(room)
  values.date = day
  values.hour = tostring(hour)
  values.hour_end = tostring(hour + 1)
  values.box = tostring(box)
end

if mode == "get" and #identities > 0 then
  -- Every request carries the next buyer's session: the store reads 32 different sessions.
  local prepared = {}
  function request()
    local n = counter
    counter = counter + 1
    local index = 1 + n % #identities
    if not prepared[index] then
      local request_headers = {}
      for name, value in pairs(wrk.headers) do
        request_headers[name] = value
      end
      request_headers["Cookie"] = identities[index].cookie
      prepared[index] = wrk.format(method, nil, request_headers, nil)
    end
    return prepared[index]
  end
end

if mode == "post" then
  function request()
    local n = counter
    counter = counter + 1
    local identity = identities[1 + n % #identities]
    local values = { token = identity.token, uid = uid() }
    if slots == "race" then
      slot_values(values, first + math.floor((n - first) / racers))
    elseif slots == "distinct" then
      slot_values(values, n)
    end
    local body = body_template:gsub("{([%w_]+)}", function(name)
      return values[name] or ("{" .. name .. "}")
    end)
    local request_headers = {}
    for name, value in pairs(wrk.headers) do
      request_headers[name] = value
    end
    request_headers["Cookie"] = identity.cookie
    request_headers["Content-Type"] = "application/x-www-form-urlencoded"
    return wrk.format(method, nil, request_headers, body)
  end
end

function response(status, response_headers, body)
  if status < 200 then
    s1 = s1 + 1
  elseif status < 300 then
    s2 = s2 + 1
  elseif status < 400 then
    s3 = s3 + 1
  elseif status < 500 then
    s4 = s4 + 1
  else
    s5 = s5 + 1
  end
  if status == 409 then
    conflicts = (conflicts or 0) + 1
  end
  -- The first client or server error of each thread is shown (what went wrong, not just how often).
  if status >= 400 and status ~= expected_error and not shown then
    shown = true
    io.stderr:write(string.format("SRBAD %d %s\n", status, body:sub(1, 20000)))
  end
end

function done(summary, latency, requests)
  local c = { 0, 0, 0, 0, 0 }
  local conflicts = 0
  for _, thread in ipairs(threads) do
    conflicts = conflicts + (thread:get("conflicts") or 0)
    c[1] = c[1] + (thread:get("s1") or 0)
    c[2] = c[2] + (thread:get("s2") or 0)
    c[3] = c[3] + (thread:get("s3") or 0)
    c[4] = c[4] + (thread:get("s4") or 0)
    c[5] = c[5] + (thread:get("s5") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    'SRJSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, '
      .. '"max_us": %d, "connect": %d, "read": %d, "write": %d, "timeout": %d, '
      .. '"s1xx": %d, "s2xx": %d, "s3xx": %d, "s4xx": %d, "s5xx": %d, "s409": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout,
    c[1], c[2], c[3], c[4], c[5], conflicts
  ))
end
