// A2A's official JS client (@a2a-js/sdk) against robby serve -a2a: the
// card, a completed task, a streamed one, a second message in the same
// context, a call approved over INPUT_REQUIRED, a cancel, and another user's token and a wrong one refused.
// Usage: node node_a2a.mjs BASE_URL ALICE_TOKEN BOB_TOKEN; A2A_MODULES is
// the node_modules directory .ci/install-mcp.sh installs the SDK into.
// Each step is reported on stderr as "@@step JSON"; "@@ok" last.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [base, aliceToken, bobToken] = process.argv.slice(2);
const modules = process.env.A2A_MODULES;
const load = (file) => import(pathToFileURL(join(modules, '@a2a-js/sdk', file)).href);
const sdk = await load('dist/index.js');
const client = await load('dist/client/index.js');
const { version } = (await import(pathToFileURL(join(modules, '@a2a-js/sdk', 'package.json')).href, { with: { type: 'json' } })).default;

const step = (name, value) => process.stderr.write(`@@${name} ${JSON.stringify(value)}\n`);
step('versions', { sdk: version, node: process.version });

// connect is a client made from the card, each request with the token.
async function connect(token) {
  const fetchImpl = (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
  const factory = new client.ClientFactory(client.ClientFactoryOptions.createFrom(client.ClientFactoryOptions.default, {
    transports: [new client.JsonRpcTransportFactory({ fetchImpl })],
  }));
  return factory.createFromUrl(base);
}

const message = (text, contextId = '') => ({
  message: { messageId: crypto.randomUUID(), role: sdk.Role.ROLE_USER, contextId, parts: [{ content: { $case: 'text', value: text } }] },
});
const state = (task) => sdk.TaskState[task.status.state];
const text = (parts) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const answer = (task) => task.artifacts.map((a) => text(a.parts)).join('|');

// The card, public.
const card = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
step('card', {
  name: card.name, skills: card.skills.map((s) => s.id), schemes: Object.keys(card.securitySchemes ?? {}),
  interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.url}`),
});

const alice = await connect(aliceToken);

// A completed task: the tool runs, the answer comes back.
const done = await alice.sendMessage(message('Echo ping, then answer.'));
step('completed', { state: state(done), answer: answer(done), contextId: done.contextId, id: done.id });

// A streamed one: each event's kind, and the answer as its pieces build it.
const events = [];
let streamed = '';
for await (const e of alice.sendMessageStream(message('Stream it.'))) {
  const p = e.payload ?? e;
  switch (p.$case) {
    case 'statusUpdate': {
      const data = p.value.status.message?.parts?.[0]?.content;
      events.push(`status:${sdk.TaskState[p.value.status.state]}${data?.$case === 'data' ? ':' + Object.keys(data.value).join(',') : ''}`);
      break;
    }
    case 'artifactUpdate':
      if (!p.value.append) streamed = '';
      streamed += text(p.value.artifact.parts);
      events.push(`artifact${p.value.lastChunk ? ':last' : ''}`);
      break;
    default:
      events.push(p.$case);
  }
}
step('streamed', { events, answer: streamed });

// A second message in the first task's context.
const second = await alice.sendMessage(message('And again?', done.contextId));
step('sameContext', { state: state(second), answer: answer(second), contextId: second.contextId, newTask: second.id !== done.id });

// A call that waits for approval (-approve get-sum): the task asks, its
// status message saying what; a data part on the task approves it.
const asking = await alice.sendMessage(message('Add 2 and 3.'));
const asked = asking.status.message?.parts?.find((p) => p.content?.$case === 'data')?.content.value ?? {};
const approved = await alice.sendMessage({
  message: {
    messageId: crypto.randomUUID(), role: sdk.Role.ROLE_USER, taskId: asking.id, contextId: asking.contextId,
    parts: [{ content: { $case: 'data', value: { approvals: asked.approve.map((c) => ({ id: c.id, approved: true })) } } }],
  },
});
step('approval', {
  asking: state(asking), said: text(asking.status.message?.parts ?? []), asked: asked.approve,
  state: state(approved), answer: answer(approved), sameTask: approved.id === asking.id,
});

// A cancel of a task still running.
const slow = await alice.sendMessage({ ...message('Take your time.'), configuration: { returnImmediately: true } });
await new Promise((r) => setTimeout(r, 200));
const cancelled = await alice.cancelTask({ id: slow.id });
const reread = await alice.getTask({ id: slow.id });
step('cancel', { first: state(slow), cancelled: state(cancelled), reread: state(reread) });

// Another user's token reads nothing of Alice's; a wrong token, nothing at all.
const bob = await connect(bobToken);
const refused = async (f) => {
  try {
    await f();
    return 'answered';
  } catch (err) {
    return `${err.constructor.name}: ${err.message}`;
  }
};
const bobTasks = await bob.listTasks({});
const aliceTasks = await alice.listTasks({});
step('otherUser', {
  get: await refused(() => bob.getTask({ id: done.id })),
  cancel: await refused(() => bob.cancelTask({ id: done.id })),
  listed: bobTasks.tasks.length,
  aliceListed: aliceTasks.tasks.length,
});
const mallory = await connect('not-a-token');
step('wrongToken', { send: await refused(() => mallory.sendMessage(message('hi'))) });
step('ok', {});
