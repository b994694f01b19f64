// The official clients of the chat stream protocols against robby serve
// -guards: npm ai's DefaultChatTransport (each part checked by the SDK's own
// schema) and readUIMessageStream, and AG-UI's HttpAgent (@ag-ui/client).
// Each reads an answer whose secret a guard redacts, then an answer a guard
// blocks. Usage: node node_ui_guards.mjs BASE_URL TOKEN; WEBUI_MODULES is
// the node_modules directory .ci/install-mcp.sh installs them into. Each step
// is reported on stderr as "@@step JSON"; "@@ok" last.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [base, token] = process.argv.slice(2);
const modules = process.env.WEBUI_MODULES;
const load = (pkg, file) => import(pathToFileURL(join(modules, pkg, file)).href);
const ai = await load('ai', 'dist/index.js');
const agui = await load('@ag-ui/client', 'dist/index.mjs');

const step = (name, value) => process.stderr.write(`@@${name} ${JSON.stringify(value)}\n`);
const headers = { Authorization: `Bearer ${token}` };

// vercel sends one question and reads the stream twice over: its parts as
// the transport gives them, and the UI message readUIMessageStream builds.
async function vercel(chatId) {
  const transport = new ai.DefaultChatTransport({ api: `${base}/api/chat`, headers });
  const messages = [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Tell me.' }] }];
  const stream = await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
  const [a, b] = stream.tee();
  const types = [];
  let deltas = '';
  let errorText = '';
  const collect = (async () => {
    for await (const chunk of a) {
      types.push(chunk.type);
      if (chunk.type === 'text-delta') deltas += chunk.delta;
      if (chunk.type === 'error') errorText = chunk.errorText;
    }
  })();
  let text = '';
  let thrown = '';
  try {
    for await (const m of ai.readUIMessageStream({ stream: b, terminateOnError: true })) {
      text = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    }
  } catch (e) {
    thrown = String(e?.message ?? e);
  }
  await collect;
  return { types: [...new Set(types)], deltas, text, errorText, thrown };
}

// aguiRun runs the agent once, keeping the text it streamed and its error.
async function aguiRun(threadId) {
  const agent = new agui.HttpAgent({ url: `${base}/ag-ui`, headers, threadId });
  agent.messages = [{ id: 'a1', role: 'user', content: 'Tell me.' }];
  const events = [];
  let text = '';
  let error = '';
  try {
    await agent.runAgent({ runId: `run-${threadId}`, tools: [], context: [] }, {
      onEvent: ({ event }) => {
        events.push(event.type);
        if (event.type === 'RUN_ERROR') error = `${event.code}: ${event.message}`;
      },
      onTextMessageContentEvent: ({ event }) => { text += event.delta; },
    });
  } catch (e) {
    if (!error) error = String(e?.message ?? e);
  }
  return { types: [...new Set(events)], text, error };
}

step('vercelSecret', await vercel('guarded-1'));
step('vercelBlocked', await vercel('guarded-2'));
step('aguiSecret', await aguiRun('guarded-3'));
step('aguiBlocked', await aguiRun('guarded-4'));
step('ok', true);
