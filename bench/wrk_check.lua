-- Drives one wrk run and checks every response it gets: the status must equal BENCH_STATUS and
-- the body length must be one of BENCH_LENGTHS. With BENCH_IDS_FILE set, the "id" each body
-- starts with is collected and written there (the bench then checks them: no duplicates, every
-- one stored). The summary is printed as one JSON line starting with "BENCH_RESULT ".
-- Configured through the environment because wrk hands script arguments to worker threads only.

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

-- Several paths are cycled through with pre-formatted requests; one path keeps wrk's static request.
local paths_file = os.getenv("BENCH_PATHS_FILE")
if paths_file and paths_file ~= "" then
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

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
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
  end
  if collect_ids and status == expected_status then
    local id = string.match(body, '^{"id":(%d+)')
    ids[#ids + 1] = tonumber(id or "0")
  end
end

function done(summary, latency, requests)
  local c, bs, bl, fb, n = 0, 0, 0, "", 0
  local out = collect_ids and assert(io.open(ids_file, "w"))
  for _, t in ipairs(threads) do
    c = c + t:get("checked")
    bs = bs + t:get("bad_status")
    bl = bl + t:get("bad_length")
    if fb == "" then fb = t:get("first_bad") end
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
      '"badStatus":%d,"badLength":%d,"firstBad":"%s","ids":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, c, bs, bl, fb, n, latency:percentile(50), latency:percentile(99), latency.max))
end
