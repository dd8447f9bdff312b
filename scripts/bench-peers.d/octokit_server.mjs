// A webhook receiver built as Probot builds one: @octokit/webhooks verifies
// each delivery's signature and dispatches it to the handlers, in memory;
// nothing is stored. It answers 202 as Roster does. `GET /` answers the
// number of pushes the handler saw, so the run can check the load was real.
//
//   node octokit_server.mjs PORT SECRET
import http from "node:http";
import { Webhooks } from "@octokit/webhooks";

const [port, secret] = process.argv.slice(2);
const webhooks = new Webhooks({ secret });
let pushes = 0;
webhooks.on("push", () => {
  pushes += 1;
});

const server = http.createServer(async (req, res) => {
  if (req.method === "GET") {
    res.end(String(pushes));
    return;
  }
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    await webhooks.verifyAndReceive({
      id: req.headers["x-github-delivery"],
      name: req.headers["x-github-event"],
      signature: req.headers["x-hub-signature-256"],
      payload: Buffer.concat(chunks).toString("utf8"),
    });
    res.writeHead(202, { "content-type": "application/json" });
    res.end('{"status":"queued"}');
  } catch (error) {
    res.writeHead(400, { "content-type": "text/plain" });
    res.end(String(error));
  }
});
server.listen(Number(port), "127.0.0.1", () => console.log("listening"));
