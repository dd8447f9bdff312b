-- wrk script: POSTs signed GitHub push deliveries taken in turn from the
-- lines of the file named by the first argument (`sha256=SIGNATURE BODY`,
-- from push_bodies.py). The second argument is wrk's thread count: thread k
-- of n takes lines k, k+n, k+2n, ..., so no two threads send the same
-- repository's push at the same moment. Each request has its own
-- X-GitHub-Delivery id.

local signatures, bodies, count, sent = {}, {}, 0, 0
local threads, stride = 0, 1

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  for line in io.lines(args[1]) do
    local signature, body = line:match("^(%S+) (.*)$")
    count = count + 1
    signatures[count], bodies[count] = signature, body
  end
  if count == 0 then
    error("no deliveries in " .. args[1])
  end
  stride = tonumber(args[2]) or 1
end

function request()
  local i = (sent * stride + thread_number - 1) % count + 1
  sent = sent + 1
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["User-Agent"] = "GitHub-Hookshot/bench",
    ["X-GitHub-Event"] = "push",
    ["X-GitHub-Delivery"] = "bench-" .. thread_number .. "-" .. sent,
    ["X-Hub-Signature-256"] = signatures[i],
  }, bodies[i])
end
