// node_drain.mjs opens many streams to `robby serve` through the official
// OpenAI Node SDK, Responses and chat completions, and waits for each to end
// while the server drains. drain_test.go runs it and sends the server SIGTERM.
//
//	OPENAI_API_KEY=token [OPENAI_NODE_SDK=/path/to/node_modules/openai] \
//	  node node_drain.mjs BASE_URL MODEL N
//
// Stream i's prompt is "KIND i", KIND one of short, long, tool, chat-short
// and chat-long (chat-* over chat completions). stderr: "@@started {}" once
// every stream has its first event; then, after a line on stdin (the server
// was signalled), "@@refused {...}", the error of a new request; then
// "@@streams [...]", how each stream ended, and "@@ok {}".
import { createInterface } from 'node:readline';
import { check, loadSDK, report } from './node_sdk.mjs';

const [baseURL, model, count] = process.argv.slice(2);
if (!baseURL || !model || !count) {
  console.error('usage: node node_drain.mjs BASE_URL MODEL N (API key in OPENAI_API_KEY)');
  process.exit(2);
}
const kinds = ['short', 'long', 'tool', 'short', 'chat-short', 'chat-long', 'short', 'tool'];

// stream runs stream i to its end and returns how it ended: its text, its
// response's ID, whether it completed, and the error that ended it.
async function stream(client, i, started) {
  const kind = kinds[i % kinds.length];
  const out = { i, kind, text: '', id: '', completed: false, error: '', code: '' };
  let first = true;
  const seen = () => {
    if (first) { first = false; started(); }
  };
  try {
    if (kind.startsWith('chat-')) {
      const s = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `${kind} ${i}` }], stream: true });
      for await (const chunk of s) {
        seen();
        out.text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.choices[0]?.finish_reason === 'stop') out.completed = true;
      }
    } else {
      const s = await client.responses.create({ model, input: `${kind} ${i}`, stream: true });
      for await (const event of s) {
        seen();
        if (event.type === 'response.created') out.id = event.response.id;
        if (event.type === 'response.output_text.delta') out.text += event.delta;
        if (event.type === 'response.completed') out.completed = true;
        if (event.type === 'error') { out.error = event.message; out.code = event.code; }
      }
    }
  } catch (err) {
    seen();
    out.error = `${err?.constructor?.name}: ${err?.message}`;
    out.code = err?.code ?? err?.error?.code ?? '';
  }
  return out;
}

async function main() {
  const { sdk } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0, timeout: 120_000 });
  const n = Number(count);
  let waiting = n;
  let allStarted;
  const everyStarted = new Promise((resolve) => { allStarted = resolve; });
  const started = () => { if (--waiting === 0) allStarted(); };
  const streams = Array.from({ length: n }, (_, i) => stream(client, i, started));
  await everyStarted;
  report('started', {});

  // The server was signalled: a new request finds no listener.
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.close();
  const late = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0, timeout: 10_000 });
  let refused = null;
  try {
    await late.responses.create({ model, input: 'short late' });
  } catch (err) {
    refused = { name: err?.constructor?.name, message: String(err?.message) };
  }
  check(refused, 'a request after SIGTERM was answered');
  report('refused', refused);

  report('streams', await Promise.all(streams));
  report('ok', {});
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
