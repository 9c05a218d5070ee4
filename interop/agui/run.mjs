// Drives the gateway's AG-UI endpoint with the official @ag-ui/client.
// Usage: node run.mjs <base URL> ; prints one JSON object with what each
// scenario saw, for the Go test (gateway/agui) to check.
import { HttpAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { randomUUID } from "node:crypto";

// Every event checked against the protocol's own schema.
const invalid = [];

const base = process.argv[2];
const url = `${base}/agui/HelperAgent/dev`;
const agent = (token, threadId) =>
  new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });

async function run(a, params = {}) {
  const types = [];
  let outcome = null;
  let error = null;
  try {
    await a.runAgent(params, {
      onEvent: ({ event }) => {
        types.push(event.type);
        const r = EventSchemas.safeParse(event);
        if (!r.success) invalid.push({ type: event.type, issues: r.error.issues.map((i) => i.message) });
      },
      onRunFinishedEvent: (p) => { outcome = { outcome: p.outcome, interrupts: p.interrupts ?? null }; },
      onRunErrorEvent: ({ event }) => { error = event.message; },
    });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  const text = a.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content).join("|");
  return { types, outcome, error, text, state: a.state, messages: a.messages.map((m) => m.role) };
}

const out = {};

// A plain run: reasoning, a tool call with its result, text, state.
{
  const a = agent("token-alice", randomUUID());
  a.addMessage({ id: randomUUID(), role: "user", content: "hi" });
  out.hello = await run(a);
}

// Interrupt and resume.
{
  const a = agent("token-alice", randomUUID());
  a.addMessage({ id: randomUUID(), role: "user", content: "ask" });
  out.ask = await run(a);
  out.pending = a.pendingInterrupts;
  const it = a.pendingInterrupts[0];

  // Bob, on Alice's thread, cannot resume her question.
  const b = agent("token-bob", a.threadId);
  b.pendingInterrupts = a.pendingInterrupts;
  out.bobResume = await run(b, { resume: [{ interruptId: it.id, status: "resolved", payload: "Mallory" }] });

  out.resume = await run(a, { resume: [{ interruptId: it.id, status: "resolved", payload: "Ada" }] });
  // The question is answered: resuming again is refused.
  a.pendingInterrupts = [it];
  out.again = await run(a, { resume: [{ interruptId: it.id, status: "resolved", payload: "Eve" }] });
}

// An exception.
{
  const a = agent("token-alice", randomUUID());
  a.addMessage({ id: randomUUID(), role: "user", content: "fail" });
  out.fail = await run(a);
}

// No credentials.
{
  const a = agent("wrong", randomUUID());
  a.addMessage({ id: randomUUID(), role: "user", content: "hi" });
  out.unauthenticated = await run(a);
}

// The client stops a run: abortRun once the agent works.
{
  const a = agent("token-alice", randomUUID());
  a.addMessage({ id: randomUUID(), role: "user", content: "wait" });
  const types = [];
  let error = null;
  try {
    await a.runAgent({}, {
      onEvent: ({ event }) => {
        types.push(event.type);
        if (event.type === "TEXT_MESSAGE_CONTENT") a.abortRun();
      },
    });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  out.abort = { types, error };
}

out.invalid = invalid;
console.log(JSON.stringify(out));
