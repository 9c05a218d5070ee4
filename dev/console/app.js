// The dev console: agent classes, a chat that streams through the
// gateway's SSE endpoints, open questions with answer forms, a live
// timeline of every run and the workflow graph. No external resources.
"use strict";

const $ = (s) => document.querySelector(s);
const state = { classes: [], cls: null, thread: "", display: "", history: [], runs: new Map() };

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") n.className = v; else if (k.startsWith("on")) n.addEventListener(k.slice(2), v); else n.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) n.append(k);
  return n;
}

function kindOf(ev, type) {
  const p = ev._parent_event_names || [ev._event_name];
  if (p.includes("ExceptionEvent")) return "error";
  if (p.includes("HumanInTheLoopRequestEvent")) return "question";
  if (p.includes("StopEvent")) return "stop";
  if (p.includes("StartEvent")) return "start";
  if (p.includes("ChunkEvent")) return "chunk";
  if (p.includes("ThoughtEvent")) return "thought";
  if (p.includes("ToolEvent")) return "tool";
  return type === "display_event" ? "display" : "control";
}

const skip = new Set(["event_id", "created_at", "_event_name", "_parent_event_names", "display_name", "display_description", "topic", "request_event"]);
function summary(ev) {
  if (ev.content !== undefined && ev._event_name === "ChunkEvent") return JSON.stringify(ev.content);
  if (ev.question) return JSON.stringify(ev.question);
  if (ev.message && ev.http_status_code) return JSON.stringify(ev.message);
  if (Array.isArray(ev.messages) && ev.messages.length) {
    const m = ev.messages[ev.messages.length - 1];
    const text = typeof m.content === "string" ? m.content
      : (m.blocks || []).filter((b) => b.block_type === "text").map((b) => b.text).join("");
    return JSON.stringify(text);
  }
  if (ev.name && ev.parameters) return ev.name + "(" + JSON.stringify(ev.parameters) + ")";
  return Object.keys(ev).filter((k) => !skip.has(k) && ev[k] !== null).sort()
    .map((k) => k + "=" + JSON.stringify(ev[k])).join(" ").slice(0, 200);
}

// --- agents and graph ---

async function loadClasses() {
  try {
    const info = await (await fetch("api/info")).json();
    $("#status").textContent = "NATS " + info.nats_url;
    state.classes = await (await fetch("api/classes")).json();
  } catch (e) {
    $("#status").textContent = "cannot reach the dev server: " + e;
    return;
  }
  const ul = $("#classes");
  ul.replaceChildren();
  for (const c of state.classes) {
    const li = el("li", { "data-class": c.agent_class, onclick: () => select(c.agent_class) },
      el("b", {}, c.agent_class),
      el("small", {}, "start: " + c.start_events.map((s) => s.event_name).join(", ")),
      c.hitl_request_events.length ? el("small", {}, "asks: " + c.hitl_request_events.map((s) => s.event_name).join(", ")) : null);
    ul.append(li);
  }
  if (state.classes.length && !state.cls) select(state.classes[0].agent_class);
}

function classInfo(name) { return state.classes.find((c) => c.agent_class === name); }

function select(name) {
  state.cls = name;
  for (const li of document.querySelectorAll("#classes li")) li.classList.toggle("selected", li.dataset.class === name);
  $("#chat-class").textContent = name;
  newThread();
  drawGraph(classInfo(name).network_graph);
}

function newThread() {
  state.thread = ""; state.display = ""; state.history = [];
  $("#chat").replaceChildren();
  $("#questions").replaceChildren();
}

const NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...kids) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  for (const k of kids) n.append(k);
  return n;
}

// drawGraph lays the workflow out in levels (distance from Start) and
// draws boxes and labelled arrows: the Mermaid export, rendered here.
function drawGraph(g) {
  const box = $("#graph");
  if (!g || !g.nodes) { box.textContent = "no graph"; return; }
  const level = new Map([["Start", 0]]);
  const queue = ["Start"];
  while (queue.length) {
    const n = queue.shift();
    for (const l of g.links) if (l.source === n && !level.has(l.target) && l.target !== "End") {
      level.set(l.target, level.get(n) + 1); queue.push(l.target);
    }
  }
  let max = 0;
  for (const v of level.values()) max = Math.max(max, v);
  for (const n of g.nodes) if (!level.has(n.id)) level.set(n.id, n.id === "End" ? max + 1 : max);
  level.set("End", Math.max(level.get("End") || 0, max + 1));
  const rows = [];
  for (const n of g.nodes) (rows[level.get(n.id)] ||= []).push(n);
  const W = 230, NW = 96, NH = 26, GAP = 64;
  const pos = new Map();
  rows.forEach((row, i) => row.forEach((n, j) => pos.set(n.id, { x: (W / (row.length + 1)) * (j + 1), y: 20 + i * GAP })));
  const H = 20 + (rows.length - 1) * GAP + 30;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "workflow graph" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#999" }))));
  const seen = new Set();
  for (const l of g.links) {
    const key = l.source + ">" + l.target + ">" + l.event_name;
    if (seen.has(key)) continue;
    seen.add(key);
    const a = pos.get(l.source), b = pos.get(l.target);
    if (!a || !b) continue;
    // Back edges go round the right, edges that skip a level round the
    // left, so neither hides behind the boxes in between.
    const back = b.y <= a.y, skip = b.y - a.y > GAP;
    const d = back
      ? `M${a.x + NW / 2},${a.y} C${W - 4},${a.y} ${W - 4},${b.y} ${b.x + NW / 2},${b.y}`
      : skip
        ? `M${a.x - NW / 2},${a.y} C4,${a.y} 4,${b.y} ${b.x - NW / 2 + 2},${b.y}`
        : `M${a.x},${a.y + NH / 2} L${b.x},${b.y - NH / 2 - 1}`;
    const mx = back ? W - 20 : skip ? 24 : (a.x + b.x) / 2, my = (a.y + b.y) / 2;
    root.append(svg("g", { class: "edge" }, svg("path", { d }), svg("text", { x: mx, y: my }, l.event_name)));
  }
  for (const n of g.nodes) {
    const p = pos.get(n.id);
    root.append(svg("g", { class: "node" + (n.type === "step" ? "" : " terminal"), "data-node": n.id },
      svg("rect", { x: p.x - NW / 2, y: p.y - NH / 2, width: NW, height: NH, rx: n.type === "step" ? 4 : 13 }),
      svg("text", { x: p.x, y: p.y }, n.label)));
  }
  box.replaceChildren(root);
}

// --- chat ---

function addMsg(kind, text) {
  const m = el("div", { class: "msg " + kind }, text);
  $("#chat").append(m);
  m.scrollIntoView({ block: "end" });
  return m;
}

// post sends an event through the gateway's streaming endpoint and shows
// the run's stream in the chat. to names another agent and thread than the
// chat's (an answer to a question of another run).
async function post(eventName, body, to) {
  const own = !to || to.thread === state.thread;
  to ||= { cls: state.cls, id: "dev", thread: state.thread, display: state.display };
  let url = `/agents/${encodeURIComponent(to.cls)}/${encodeURIComponent(to.id)}/${eventName}/stream`;
  if (to.thread) url += `?thread_id=${to.thread}&display_id=${to.display}`;
  let resp;
  try {
    resp = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  } catch (e) { addMsg("error", String(e)); return; }
  if (!resp.ok) { addMsg("error", resp.status + " " + (await resp.text())); return; }
  if (own) {
    state.thread = resp.headers.get("X-Thread-Id") || state.thread;
    state.display = resp.headers.get("X-Display-Id") || state.display;
  }
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "", bubble = null, answer = "";
  const handle = (data) => {
    if (data === "[DONE]") return;
    const ev = JSON.parse(data);
    switch (kindOf(ev, "display_event")) {
      case "chunk":
        bubble ||= addMsg("assistant", "");
        bubble.textContent += ev.content; answer += ev.content;
        break;
      case "thought": case "tool":
        addMsg("note", ev._event_name + " " + summary(ev)); bubble = null;
        break;
      case "question":
        // The transcript keeps the question; the form below takes the answer.
        if (own) { addMsg("assistant question", ev.question); bubble = null; }
        showQuestion(ev);
        break;
      case "error":
        addMsg("error", ev.message);
        break;
      case "stop":
        if (!bubble) { answer = summary(ev); addMsg("assistant", answer); }
        break;
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of block.split("\n")) if (line.startsWith("data: ")) handle(line.slice(6));
    }
  }
  if (answer && own) state.history.push({ role: "assistant", content: answer });
}

// showQuestion shows an open question with its answer form, once per
// question, whichever run asked it: the answer goes to the run's thread.
function showQuestion(ev) {
  if (document.querySelector(`#questions form[data-id="${ev.event_id}"]`)) return;
  const tp = ev.topic || {};
  const to = { cls: tp.agent_class || state.cls, id: tp.agent_id || "dev", thread: tp.thread_id || state.thread, display: tp.display_id || state.display };
  const responseName = tp.event_name || ev._event_name.replace("RequestEvent", "ResponseEvent");
  const answer = async (value, label) => {
    form.remove();
    addMsg("user", label);
    await post(responseName, { response: value, request_event: ev }, to);
  };
  const other = to.thread !== state.thread ? el("small", { class: "muted" }, ` (${to.cls}/${to.id}, thread ${to.thread.slice(-8)})`) : null;
  const form = el("form", { class: "question", "data-event": ev._event_name, "data-id": ev.event_id }, el("p", {}, ev.question, other));
  if (ev.hitl_type === "confirmation") {
    form.append(el("button", { type: "button", onclick: () => answer(true, "yes") }, "Yes"), " ",
      el("button", { type: "button", onclick: () => answer(false, "no") }, "No"));
    form.addEventListener("submit", (e) => e.preventDefault());
  } else {
    const input = el("input", { name: "answer", placeholder: "Your answer…", autocomplete: "off" });
    form.append(el("div", { style: "display:flex;gap:.5em" }, input, el("button", { type: "submit" }, "Answer")));
    form.addEventListener("submit", (e) => { e.preventDefault(); answer(input.value, input.value); });
  }
  $("#questions").append(form);
  form.querySelector("input, button").focus();
}

// closeQuestion removes the form of a question answered elsewhere.
function closeQuestion(id) {
  const f = document.querySelector(`#questions form[data-id="${id}"]`);
  if (f) f.remove();
}

$("#send").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("#message").value.trim();
  if (!text || !state.cls) return;
  $("#message").value = "";
  addMsg("user", text);
  state.history.push({ role: "user", content: text });
  await post("UserMessageEvent", { messages: state.history });
});
$("#new-thread").addEventListener("click", newThread);

// openThread continues a thread of the timeline in the chat: its history
// (the gateway's GET .../threads/{thread}/messages) first.
async function openThread(thread) {
  const msgs = [];
  for (let after = ""; ;) {
    const resp = await fetch(`/api/v1/saap/threads/${thread}/messages?limit=500` + (after ? `&after=${after}` : ""));
    if (!resp.ok) { addMsg("error", `thread ${thread}: ` + resp.status + " " + (await resp.text())); return; }
    const page = await resp.json();
    msgs.push(...page.messages);
    if (!page.next) break;
    after = page.next;
  }
  newThread();
  state.thread = thread;
  for (const e of msgs) {
    const text = (e.message.blocks || []).filter((b) => b.block_type === "text").map((b) => b.text).join("");
    const role = e.message.role === "user" ? "user" : "assistant";
    addMsg(role, text);
    state.history.push({ role, content: text });
  }
}

// --- timeline ---

// attribute names the step that produced a control event, the event it
// ran on and whether the engine ran it again, as the engine's headers
// say (e.step, e.trigger_id, e.rerun); for events without them it guesses
// from the class's graph.
function attribute(run, e) {
  if (e.event_type !== "control_event") return null;
  if (e.step) {
    const p = run.events.findLast((p) => p.event_type === "control_event" && p.event.event_id === e.trigger_id);
    return p ? { step: e.step, on: p.event_name, ms: Date.parse(e.time) - Date.parse(p.time), rerun: !!e.rerun } : null;
  }
  const c = classInfo(e.agent_class);
  if (!c) return null;
  for (const l of c.network_graph.links) {
    if (l.source === "Start" || (l.event_name !== e.event_name && l.event_name + "RequestEvent" !== e.event_name)) continue;
    const triggers = c.network_graph.links.filter((t) => t.target === l.source).map((t) => t.event_name);
    for (let i = run.events.length - 1; i >= 0; i--) {
      const p = run.events[i];
      if (p.event_type === "control_event" && p.agent_class === e.agent_class &&
        (triggers.includes(p.event_name) || triggers.includes(p.event_name.replace(/ResponseEvent$/, "")))) {
        return { step: l.source, on: p.event_name, ms: Date.parse(e.time) - Date.parse(p.time) };
      }
    }
  }
  return null;
}

function addEvent(e) {
  let run = state.runs.get(e.run_id);
  if (!run) {
    const list = el("div", { class: "events" });
    const head = el("h3", { title: "thread " + e.thread_id + ": click to continue it in the chat", onclick: () => openThread(e.thread_id) },
      `run ${e.run_id.slice(-8)} `, el("span", { class: "muted" }, ""));
    const section = el("div", { class: "run", "data-run": e.run_id }, head, list);
    run = { events: [], list, head, section, start: Date.parse(e.time) };
    state.runs.set(e.run_id, run);
    $("#timeline").prepend(section);
  }
  if (e.agent_class !== "UserAgent") run.head.querySelector(".muted").textContent = e.agent_class + "/" + e.agent_id;
  const ev = e.event;
  const kind = kindOf(ev, e.event_type);
  // Questions of every run are open until an answer or the run's end.
  if (kind === "question" && e.event_type === "display_event") showQuestion(ev);
  if (ev.request_event && ev.request_event.event_id) closeQuestion(ev.request_event.event_id);
  const at = attribute(run, e);
  run.events.push(e);
  const ctl = e.event_type === "control_event";
  const row = el("div", { class: "ev " + kind, title: (e.parents || []).join(" → ") + "\n" + e.subject, "data-name": e.event_name, "data-type": ctl ? "control" : "display" },
    el("span", { class: "t" }, "+" + Math.max(0, Date.parse(e.time) - run.start) + "ms"),
    el("b", { class: "badge " + (ctl ? "c" : "d") }, ctl ? "C" : "D"),
    el("span", {}, el("span", { class: "name" }, e.event_name), " ",
      el("span", { class: "sum" }, summary(ev)),
      at ? el("span", { class: "dur", "data-step": at.step }, ` ← ${at.step} on ${at.on}, ${at.ms}ms${at.rerun ? ", re-run" : ""}`) : null));
  run.list.append(row);
}

function follow() {
  const src = new EventSource("api/events");
  src.onmessage = (m) => addEvent(JSON.parse(m.data));
  src.onopen = () => document.body.setAttribute("data-following", "1");
}

loadClasses();
follow();
