// End-to-end test of the gateway's A2A adapter with the official
// JavaScript client (@a2a-js/sdk). The Go test TestNodeClient starts a
// gateway with a real agent and runs this script with:
//   A2A_URL      the agent's A2A base URL (its card is under /.well-known)
//   TOKEN_ALICE  a bearer token of one user
//   TOKEN_BOB    a bearer token of another user
// Every scenario runs twice: with the client's native protocol (v1.0 method
// names) and with its v0.3 compatibility transport (message/send ...).
import assert from "node:assert/strict";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.env.A2A_URL;
const tokens = { alice: process.env.TOKEN_ALICE, bob: process.env.TOKEN_BOB };
assert.ok(url && tokens.alice && tokens.bob, "A2A_URL, TOKEN_ALICE and TOKEN_BOB must be set");

// authFetch adds the bearer token; version, if set, replaces the
// A2A-Version header, so the card resolver can ask as a v0.3 client would.
function authFetch(token, version) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${token}`);
    if (version) headers.set("A2A-Version", version);
    return fetch(input, { ...init, headers });
  };
}

async function client(token, legacy) {
  const fetchImpl = authFetch(token);
  const legacyCompat = legacy ? { enabled: true } : undefined;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat })],
      cardResolver: new DefaultAgentCardResolver({
        fetchImpl: authFetch(token, legacy ? "0.3" : undefined),
        legacyCompat,
      }),
    }),
  );
  return factory.createFromUrl(`${url}/.well-known/agent-card.json`, "");
}

let n = 0;
function message(text, task) {
  return {
    message: {
      messageId: `m-${process.pid}-${++n}`,
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text } }],
      taskId: task?.id ?? "",
      contextId: task?.contextId ?? "",
    },
  };
}

function text(parts) {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
}

// collect reads a stream: artifact texts, status states, the final status.
async function collect(stream) {
  const out = { texts: [], states: [], answer: "", task: null, status: null };
  for await (const ev of stream) {
    const { $case, value } = ev.payload ?? ev;
    switch ($case) {
      case "task":
        out.task = { id: value.id, contextId: value.contextId };
        out.states.push(value.status?.state);
        break;
      case "statusUpdate":
        out.task = { id: value.taskId, contextId: value.contextId };
        out.states.push(value.status?.state);
        out.status = value.status;
        break;
      case "artifactUpdate": {
        const t = text(value.artifact?.parts);
        out.texts.push(t);
        out.answer = value.append ? out.answer + t : t;
        break;
      }
    }
  }
  return out;
}

async function refused(what, promise) {
  await assert.rejects(promise, (err) => {
    assert.match(String(err?.message ?? err), /not found/i, `${what}: ${err}`);
    return true;
  }, `${what} was not refused`);
}

for (const legacy of [false, true]) {
  const mode = legacy ? "v0.3" : "v1.0";
  const alice = await client(tokens.alice, legacy);
  const bob = await client(tokens.bob, legacy);

  // Streaming: the chunks, then the stop's whole answer, then completed.
  let s = await collect(alice.sendMessageStream(message("world")));
  assert.deepEqual(s.texts, ["Hello", ", ", "world", "Hello, world"], `${mode} stream artifacts`);
  assert.equal(s.states.at(-1), TaskState.TASK_STATE_COMPLETED, `${mode} stream end state`);
  let task = await alice.getTask({ id: s.task.id });
  assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED, `${mode} tasks/get state`);
  assert.equal(text(task.artifacts[0].parts), "Hello, world", `${mode} tasks/get artifact`);

  // Blocking send.
  const sent = await alice.sendMessage(message("Ada"));
  const sentTask = sent.payload?.value ?? sent;
  assert.equal(text(sentTask.artifacts?.[0]?.parts), "Hello, Ada", `${mode} message/send artifact`);

  // input-required round-trips a HITL question.
  s = await collect(alice.sendMessageStream(message("ask")));
  assert.equal(s.states.at(-1), TaskState.TASK_STATE_INPUT_REQUIRED, `${mode} question state`);
  assert.equal(text(s.status.message.parts), "What is your name?", `${mode} question text`);
  const waiting = s.task;

  // Another user can neither read, continue, cancel nor resubscribe to it.
  await refused(`${mode} bob tasks/get`, bob.getTask({ id: waiting.id }));
  await refused(`${mode} bob message to the task`, bob.sendMessage(message("Mallory", waiting)));
  await refused(`${mode} bob tasks/cancel`, bob.cancelTask({ id: waiting.id }));
  await refused(`${mode} bob resubscribe`, collect(bob.resubscribeTask({ id: waiting.id })));

  s = await collect(alice.sendMessageStream(message("Grace", waiting)));
  assert.equal(s.task.id, waiting.id, `${mode} answer continues the task`);
  assert.equal(s.states.at(-1), TaskState.TASK_STATE_COMPLETED, `${mode} state after the answer`);
  assert.equal(s.answer, "Hello, Grace", `${mode} answer after the question`);

  // Cancel a waiting task.
  s = await collect(alice.sendMessageStream(message("ask")));
  task = await alice.cancelTask({ id: s.task.id });
  assert.equal(task.status.state, TaskState.TASK_STATE_CANCELED, `${mode} cancel`);

  console.log(`ok ${mode}`);
}
