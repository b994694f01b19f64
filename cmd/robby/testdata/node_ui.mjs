// The official clients of the two chat stream protocols against robby
// serve: the Vercel AI SDK (npm ai: DefaultChatTransport, which checks
// every part with uiMessageChunkSchema, and readUIMessageStream, which
// builds the UI message as useChat does) and AG-UI's HttpAgent
// (@ag-ui/client, which checks the order of the events itself).
// Usage: node node_ui.mjs BASE_URL TOKEN; WEBUI_MODULES is the
// node_modules directory .ci/install-mcp.sh installs them into. Each step
// is reported on stderr as "@@step JSON"; "@@ok" last.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [base, token] = process.argv.slice(2);
const modules = process.env.WEBUI_MODULES;
const load = (pkg, file) => import(pathToFileURL(join(modules, pkg, file)).href);
const ai = await load('ai', 'dist/index.js');
const agui = await load('@ag-ui/client', 'dist/index.mjs');
const pkg = async (name) => (await import(pathToFileURL(join(modules, name, 'package.json')).href, { with: { type: 'json' } })).default.version;

const step = (name, value) => process.stderr.write(`@@${name} ${JSON.stringify(value)}\n`);
const headers = { Authorization: `Bearer ${token}` };
step('versions', { ai: await pkg('ai'), agui: await pkg('@ag-ui/client'), node: process.version });

// --- the Vercel AI SDK ------------------------------------------------------

// chunks reads a UI message stream as the transport gives it, keeping
// each part's type, and the UI message it builds.
async function vercel(chatId, messages) {
  const transport = new ai.DefaultChatTransport({ api: `${base}/api/chat`, headers });
  const stream = await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
  const [a, b] = stream.tee();
  const types = [];
  const collect = (async () => {
    for await (const chunk of a) types.push(chunk.type);
  })();
  let message;
  for await (const m of ai.readUIMessageStream({ stream: b, terminateOnError: true })) message = m;
  await collect;
  return { types, message };
}

const question = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Run the long operation, then echo.' }] };
const first = await vercel('node-chat', [question]);
const tools = first.message.parts.filter((p) => p.type === 'dynamic-tool');
step('vercel', {
  types: [...new Set(first.types)],
  progress: first.types.filter((t) => t === 'data-progress').length,
  text: first.message.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''),
  tools: tools.map((p) => ({ name: p.toolName, state: p.state, input: p.input, output: p.output })),
  metadata: first.message.metadata ?? null,
});

// The next message of the stored chat: the server reads the history from
// its store, so the client's copy is only sent along.
const second = await vercel('node-chat', [question, first.message, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'And again?' }] }]);
step('vercel2', { text: second.message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') });

// Each part, checked on its own by the schema the SDK exports.
const raw = await fetch(`${base}/api/chat`, {
  method: 'POST',
  headers: { ...headers, 'Content-Type': 'application/json' },
  body: JSON.stringify({ id: 'node-raw', messages: [question], trigger: 'submit-message' }),
});
let checked = 0;
const invalid = [];
for await (const part of ai.parseJsonEventStream({ stream: raw.body, schema: ai.uiMessageChunkSchema })) {
  checked++;
  if (!part.success) invalid.push(String(part.error));
}
step('schema', { header: raw.headers.get('x-vercel-ai-ui-message-stream'), checked, invalid });

// --- AG-UI ---------------------------------------------------------------------

const agent = new agui.HttpAgent({ url: `${base}/ag-ui`, headers, threadId: 'node-thread' });
agent.messages = [{ id: 'a1', role: 'user', content: 'Echo something.' }];
const events = [];
let text = '';
let args = '';
let result = '';
await agent.runAgent({ runId: 'run-1', tools: [], context: [] }, {
  onEvent: ({ event }) => { events.push(event.type); },
  onTextMessageContentEvent: ({ event }) => { text += event.delta; },
  onToolCallArgsEvent: ({ event }) => { args += event.delta; },
  onToolCallResultEvent: ({ event }) => { result = event.content; },
});
step('agui', {
  types: [...new Set(events)],
  text,
  args,
  result,
  messages: agent.messages.map((m) => ({ role: m.role, toolCalls: (m.toolCalls || []).map((c) => c.function.name) })),
});

step('ok', true);
