// Drives the gateway's OpenAI-compatible endpoint with the official openai
// client. Usage: node run.mjs <base URL> <token> ; prints one JSON object
// with what each scenario saw, for the Go test (gateway) to check.
import OpenAI from "openai";

const [base, token] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 });
const out = {};

// Pick a model from the list, as a client does, and use it.
const models = await client.models.list();
out.models = models.data.map((m) => m.id);
const model = out.models[0];
const res = await client.chat.completions.create({ model, messages: [{ role: "user", content: "tokens" }] });
out.completion = { model: res.model, content: res.choices[0].message.content, usage: res.usage };

// Streamed, with the usage chunk at the end.
const stream = await client.chat.completions.create({
  model, stream: true, stream_options: { include_usage: true },
  messages: [{ role: "user", content: "tokens" }],
});
let text = "";
let usage = null;
for await (const chunk of stream) {
  for (const c of chunk.choices) text += c.delta?.content ?? "";
  if (chunk.usage) usage = chunk.usage;
}
out.stream = { content: text, usage };

// What the endpoint cannot honour is refused in OpenAI's error shape.
try {
  await client.chat.completions.create({
    model, messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }],
  });
  out.tools = { status: 200 };
} catch (e) {
  out.tools = { status: e.status, param: e.param ?? null, message: e.message };
}

console.log(JSON.stringify(out));
