// KafkaJS against a wireserver test broker whose next two Produce requests for a topic are
// answered NOT_LEADER_OR_FOLLOWER: the producer refreshes its metadata, retries, and each
// message is stored once. Prints each HTTP answer as "METHOD URL STATUS BODY", then what
// KafkaJS returned ("SENT ...") and the topic's offsets ("OFFSETS ...").
// Run: npm ci && WIRESERVER_CONTROLS_URL=http://127.0.0.1:PORT/controls \
//      WIRESERVER_BOOTSTRAP=127.0.0.1:PORT node retry.mjs

import { Kafka, logLevel } from "kafkajs";

const controls = process.env.WIRESERVER_CONTROLS_URL;
const bootstrap = process.env.WIRESERVER_BOOTSTRAP;
if (!controls || !bootstrap) {
  console.error("set WIRESERVER_CONTROLS_URL (/controls) and WIRESERVER_BOOTSTRAP (host:port)");
  process.exit(2);
}

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

const topic = `kafkajs-${process.pid}-${Date.now()}`;
const kafka = new Kafka({
  clientId: "controls-example",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 50, retries: 5 },
});
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });

await send("POST", controls, {
  control: "error",
  api: "Produce",
  error: "NOT_LEADER_OR_FOLLOWER",
  count: 2,
  topic,
});
const producer = kafka.producer();
await producer.connect();
const sent = await producer.send({
  topic,
  acks: -1,
  messages: [{ value: "one" }, { value: "two" }, { value: "three" }],
});
console.log(`SENT ${JSON.stringify(sent)}`);
await producer.disconnect();

// The control answered both of its errors, so it has left the list.
await send("GET", controls);
console.log(`OFFSETS ${JSON.stringify(await admin.fetchTopicOffsets(topic))}`);
await admin.disconnect();
