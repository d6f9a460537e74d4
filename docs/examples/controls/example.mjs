// Inject a Produce error into a wireserver test broker, list the active controls, undo it.
// Run: WIRESERVER_CONTROLS_URL=http://127.0.0.1:PORT/controls node example.mjs
// (Node 18 or later: its built-in fetch.)

const controls = process.env.WIRESERVER_CONTROLS_URL;
if (!controls) {
  console.error("set WIRESERVER_CONTROLS_URL to the broker's /controls URL");
  process.exit(2);
}

// One request; prints "METHOD URL STATUS BODY" and returns the body parsed.
async function send(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  console.log(`${method} ${url} ${response.status} ${text}`);
  return JSON.parse(text);
}

// The next 3 Produce requests are answered NOT_LEADER_OR_FOLLOWER instead of handled.
const added = await send("POST", controls, {
  control: "error",
  api: "Produce",
  error: "NOT_LEADER_OR_FOLLOWER",
  count: 3,
});
await send("GET", controls);
await send("DELETE", `${controls}/${added.id}`);
