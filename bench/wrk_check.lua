-- Drives one wrk run and checks every response it gets: the status must equal BENCH_STATUS and
-- the body length must be one of BENCH_LENGTHS (and, with BENCH_SUFFIX_FILE, the body must end
-- with that file's bytes, e.g. a gRPC-Web OK trailer). With BENCH_IDS_FILE set, the "id" each
-- body starts with is collected and written there (the bench then checks them: no duplicates,
-- every one stored). BENCH_REQUESTS_FILE holds requests that differ by more than their path (the
-- matrix's writes and deletes), sent in turn from index BENCH_START on; with BENCH_WRAP=0 they
-- are not sent again once all were (a delete's ids are used once). The summary is printed as one
-- JSON line starting with "BENCH_RESULT ". Configured through the environment because wrk hands
-- script arguments to worker threads only.

local expected_status = tonumber(os.getenv("BENCH_STATUS") or "200")
local allowed = {}
for n in string.gmatch(os.getenv("BENCH_LENGTHS") or "", "%d+") do allowed[tonumber(n)] = true end
local ids_file = os.getenv("BENCH_IDS_FILE")
local collect_ids = ids_file ~= nil and ids_file ~= ""

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body_file = os.getenv("BENCH_BODY_FILE")
if body_file and body_file ~= "" then
  wrk.body = slurp(body_file)
  wrk.headers["Content-Type"] = os.getenv("BENCH_CONTENT_TYPE") or "application/json"
end

-- Several paths are cycled through with pre-formatted requests; one path keeps wrk's static
-- request. Formatted in init(), once wrk.init has set the Host header (a request formatted before
-- would go without it).
local paths_file = os.getenv("BENCH_PATHS_FILE")
local function cycle_paths()
  local requests = {}
  for line in string.gmatch(slurp(paths_file), "[^\n]+") do
    requests[#requests + 1] = wrk.format(nil, line)
  end
  local i = 0
  request = function()
    i = i % #requests + 1
    return requests[i]
  end
end

-- A requests file: per request "METHOD PATH BODY-LENGTH\n", then the body's bytes. Every request
-- carries BENCH_CONTENT_TYPE (when it has a body) and the "name: value" lines of BENCH_HEADERS.
local requests_file = os.getenv("BENCH_REQUESTS_FILE")
generated = 0
exhausted = 0
local function send_requests_file()
  local headers = { Host = wrk.headers["Host"] }
  for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "", "([^:\n]+): ([^\n]*)") do
    headers[name] = value
  end
  local content_type = os.getenv("BENCH_CONTENT_TYPE") or "application/json"
  local text = slurp(requests_file)
  local requests = {}
  local at = 1
  while at <= #text do
    local line_end = string.find(text, "\n", at, true)
    local method, path, length = string.match(string.sub(text, at, line_end - 1), "^(%S+) (%S+) (%d+)$")
    length = tonumber(length)
    local body = nil
    if length > 0 then
      body = string.sub(text, line_end + 1, line_end + length)
      headers["Content-Type"] = content_type
    else
      headers["Content-Type"] = nil
    end
    requests[#requests + 1] = wrk.format(method, path, headers, body)
    at = line_end + length + 1
  end
  local wrap = os.getenv("BENCH_WRAP") ~= "0"
  local start = tonumber(os.getenv("BENCH_START") or "0")
  local last = requests[#requests]
  request = function()
    local i = start + generated
    generated = generated + 1
    if i >= #requests then
      if not wrap then
        -- Sent again, it fails its check (a deleted id is 404): counted, and said below.
        exhausted = 1
        return last
      end
      i = i % #requests
    end
    return requests[i + 1]
  end
end

local suffix = nil
local suffix_file = os.getenv("BENCH_SUFFIX_FILE")
if suffix_file and suffix_file ~= "" then suffix = slurp(suffix_file) end

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  if paths_file and paths_file ~= "" then cycle_paths() end
  if requests_file and requests_file ~= "" then send_requests_file() end
  checked = 0
  bad_status = 0
  bad_length = 0
  first_bad = ""
  ids = {}
end

function response(status, headers, body)
  checked = checked + 1
  local len = body and #body or 0
  if status ~= expected_status then
    bad_status = bad_status + 1
    if first_bad == "" then first_bad = "status " .. status .. ", " .. len .. " bytes" end
  elseif not allowed[len] then
    bad_length = bad_length + 1
    if first_bad == "" then first_bad = "status " .. status .. ", " .. len .. " bytes" end
  elseif suffix and string.sub(body, -#suffix) ~= suffix then
    bad_length = bad_length + 1
    if first_bad == "" then first_bad = "status " .. status .. ", " .. len .. " bytes, another ending" end
  end
  if collect_ids and status == expected_status then
    local id = string.match(body, '^{"id":(%d+)')
    ids[#ids + 1] = tonumber(id or "0")
  end
end

function done(summary, latency, requests)
  local c, bs, bl, fb, n, g, x = 0, 0, 0, "", 0, 0, 0
  local out = collect_ids and assert(io.open(ids_file, "w"))
  for _, t in ipairs(threads) do
    c = c + t:get("checked")
    bs = bs + t:get("bad_status")
    bl = bl + t:get("bad_length")
    if fb == "" then fb = t:get("first_bad") end
    g = g + t:get("generated")
    x = math.max(x, t:get("exhausted"))
    if out then
      local list = t:get("ids")
      for i = 1, #list do out:write(string.format("%d\n", list[i])) end
      n = n + #list
    end
  end
  if out then out:close() end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"connectErrors":%d,' ..
      '"readErrors":%d,"writeErrors":%d,"statusErrors":%d,"timeouts":%d,"checked":%d,' ..
      '"badStatus":%d,"badLength":%d,"firstBad":"%s","ids":%d,"generated":%d,"exhausted":%d,' ..
      '"p50Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, c, bs, bl, fb, n, g, x, latency:percentile(50), latency:percentile(99), latency.max))
end
