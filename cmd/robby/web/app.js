// The chat page of robby serve: it speaks the Vercel AI SDK's UI message
// stream (POST /api/chat) and reads the user's stored chats (/api/chats).
// Model output is hostile input: Markdown goes through marked, then
// DOMPurify; tool arguments and results are set as text, never as HTML.
import { marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.mjs';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'robby.token';

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY) || '',
  store: false,   // the server keeps chats
  chats: [],      // the user's chats, the most recent first
  chatId: '',     // the open chat
  messages: [],   // the open chat's UI messages
  running: null,  // the AbortController of the answer streaming
};

class SignInNeeded extends Error {}

// Links open in a new tab, without telling the page where they came from.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

function markdown(text) {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true }));
}

// api calls the server with the bearer token; a 401 asks for sign-in.
async function api(path, opts = {}) {
  const headers = { ...(opts.headers || {}) };
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { ...opts, headers });
  if (r.status === 401) {
    signIn('The server did not accept this token. Check it and sign in again.');
    throw new SignInNeeded();
  }
  return r;
}

async function errorText(r) {
  try {
    const j = await r.json();
    if (j.error && j.error.message) return j.error.message;
  } catch { /* not JSON */ }
  return `The server answered ${r.status} ${r.statusText}.`;
}

function newId() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// --- sign-in -------------------------------------------------------------

function signIn(message) {
  const err = $('sign-in-error');
  err.hidden = !message;
  err.textContent = message || '';
  if (!$('sign-in').open) $('sign-in').showModal();
  $('token').focus();
}

async function submitSignIn(ev) {
  ev.preventDefault();
  const token = $('token').value.trim();
  if (!token) return;
  const r = await fetch('/api/chats', { headers: { Authorization: 'Bearer ' + token } }).catch(() => null);
  if (!r) return signIn('Could not reach the robby server.');
  if (r.status === 401) return signIn('That token was not accepted.');
  state.token = token;
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(TOKEN_KEY);
  ($('remember').checked ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
  $('token').value = '';
  $('sign-in').close();
  $('sign-out').hidden = false;
  await start();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(TOKEN_KEY);
  state.token = '';
  location.hash = '';
  location.reload();
}

// --- the chat list ---------------------------------------------------------

async function loadChats() {
  let r;
  try {
    r = await api('/api/chats');
  } catch (e) {
    if (e instanceof SignInNeeded) return false;
    showError('Could not reach the robby server.');
    return false;
  }
  if (r.status === 404) {
    state.store = false;
    $('no-store').hidden = false;
    return true;
  }
  if (!r.ok) {
    showError(await errorText(r));
    return true;
  }
  state.store = true;
  $('no-store').hidden = true;
  state.chats = (await r.json()).data || [];
  renderChats();
  return true;
}

function renderChats() {
  const ul = $('chats');
  ul.replaceChildren();
  for (const c of state.chats) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', String(c.id === state.chatId));
    const open = button(c.title || 'Untitled', 'open', () => openChat(c.id));
    open.title = c.title || 'Untitled';
    li.append(open, button('Rename', 'act', () => rename(c.id)), button('Delete', 'act', () => remove(c.id)));
    ul.append(li);
  }
}

function button(label, cls, onclick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = cls;
  b.textContent = label;
  b.addEventListener('click', onclick);
  return b;
}

function rename(id) {
  const li = [...$('chats').children].find((x) => x.dataset.id === id);
  const chat = state.chats.find((c) => c.id === id);
  if (!li || !chat) return;
  const input = document.createElement('input');
  input.value = chat.title;
  input.setAttribute('aria-label', 'New title');
  li.replaceChildren(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    if (save && input.value.trim() && input.value !== chat.title) {
      const r = await api(`/api/chats/${encodeURIComponent(id)}`, { method: 'PATCH', body: JSON.stringify({ title: input.value.trim() }) });
      if (!r.ok) showError(await errorText(r));
      if (id === state.chatId) $('title').textContent = input.value.trim();
    }
    await loadChats();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') finish(true);
    if (e.key === 'Escape') { e.stopPropagation(); finish(false); }
  });
  input.addEventListener('blur', () => finish(true));
}

async function remove(id) {
  const chat = state.chats.find((c) => c.id === id);
  if (!confirm(`Delete “${chat ? chat.title : id}”? This cannot be undone.`)) return;
  const r = await api(`/api/chats/${encodeURIComponent(id)}`, { method: 'DELETE' });
  if (!r.ok) showError(await errorText(r));
  if (id === state.chatId) newChat();
  await loadChats();
}

async function openChat(id) {
  if (state.running) state.running.abort();
  const r = await api(`/api/chats/${encodeURIComponent(id)}`);
  if (r.status === 404) {
    newChat();
    return;
  }
  if (!r.ok) return showError(await errorText(r));
  const chat = await r.json();
  state.chatId = chat.id;
  state.messages = chat.uiMessages || [];
  location.hash = chat.id;
  $('title').textContent = chat.title || 'Untitled';
  renderChats();
  renderLog();
  closeSideOnPhone();
  $('prompt').focus();
}

function newChat() {
  if (state.running) state.running.abort();
  state.chatId = newId();
  state.messages = [];
  history.replaceState(null, '', location.pathname);
  $('title').textContent = 'New chat';
  renderChats();
  renderLog();
  $('prompt').focus();
}

// --- the conversation --------------------------------------------------------

function renderLog() {
  const log = $('log');
  log.replaceChildren();
  if (state.messages.length === 0) {
    const p = document.createElement('p');
    p.className = 'empty';
    p.textContent = 'Ask the agent anything. Its tool calls show here as they run.';
    log.append(p);
  }
  for (const m of state.messages) log.append(renderMessage(m));
  log.scrollTop = log.scrollHeight;
}

function renderMessage(m) {
  const div = document.createElement('div');
  div.className = `msg ${m.role}`;
  div.dataset.id = m.id;
  fillMessage(div, m);
  return div;
}

function fillMessage(div, m) {
  const body = document.createElement('div');
  body.className = 'body';
  if (m.role === 'user') {
    body.textContent = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  } else {
    for (const p of m.parts) {
      const el = renderPart(p);
      if (el) body.append(el);
    }
    const meta = m.metadata || {};
    for (const n of Object.values(meta.notices || {})) body.append(note(n));
    if (m.streaming && !meta.error) (body.lastElementChild || body).classList.add('cursor');
    if (meta.error) body.append(errorBox(meta.error));
    if (meta.stopped) body.append(errorBox(stoppedText(meta.stopped)));
    if (meta.usage) body.append(usageLine(meta.usage, meta.model));
  }
  div.replaceChildren(body);
}

function renderPart(p) {
  if (p.type === 'text') {
    const d = document.createElement('div');
    d.className = 'md';
    d.innerHTML = markdown(p.text);
    return d;
  }
  if (p.type === 'reasoning') {
    const d = document.createElement('details');
    d.className = 'reasoning';
    const s = document.createElement('summary');
    s.textContent = 'Reasoning';
    const t = document.createElement('div');
    t.className = 'text';
    t.textContent = p.text;
    d.append(s, t);
    return d;
  }
  if (p.type === 'dynamic-tool' || p.type.startsWith('tool-')) return renderTool(p);
  return null;
}

function renderTool(p) {
  const d = document.createElement('details');
  d.className = 'tool';
  d.open = p.open ?? true;
  d.addEventListener('toggle', () => { p.open = d.open; });
  const s = document.createElement('summary');
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = p.toolName || p.type.replace(/^tool-/, '');
  const st = document.createElement('span');
  st.className = 'state';
  st.textContent = {
    'input-streaming': 'writing arguments…',
    'input-available': 'running…',
    'output-available': 'done',
    'output-error': 'failed',
  }[p.state] || p.state;
  if (p.state === 'output-error') st.classList.add('error');
  s.append('Tool ', name, st);
  d.append(s, heading('Arguments'), pre(p.input !== undefined ? JSON.stringify(p.input, null, 2) : p.inputText || ''));
  if (p.nested) d.append(heading('Its agent'), pre(p.nested));
  if (p.state === 'output-available') d.append(heading('Result'), pre(typeof p.output === 'string' ? p.output : JSON.stringify(p.output, null, 2)));
  if (p.state === 'output-error') d.append(heading('Error'), pre(p.errorText || ''));
  return d;
}

function heading(text) {
  const h = document.createElement('h4');
  h.textContent = text;
  return h;
}

function pre(text) {
  const p = document.createElement('pre');
  p.textContent = text;
  return p;
}

function note(text) {
  const p = document.createElement('p');
  p.className = 'notice';
  p.textContent = text;
  return p;
}

function errorBox(text) {
  const p = document.createElement('p');
  p.className = 'error';
  p.setAttribute('role', 'alert');
  p.textContent = text;
  return p;
}

function stoppedText(stopped) {
  return {
    budget: 'Stopped: the agent reached its budget.',
    max_turns: 'Stopped: the agent reached its turn limit.',
    user: 'Stopped.',
  }[stopped] || `Stopped: ${stopped}.`;
}

function usageLine(u, model) {
  const p = document.createElement('p');
  p.className = 'usage';
  let s = `${u.promptTokens} tokens in · ${u.completionTokens} out`;
  if (u.cost) s += ` · cost ${u.cost.toFixed(u.cost < 0.01 ? 5 : 3)}`;
  if (model) s += ` · ${model}`;
  p.textContent = s;
  return p;
}

function showError(text) {
  const log = $('log');
  log.querySelector('.empty')?.remove();
  const div = document.createElement('div');
  div.className = 'msg';
  div.append(errorBox(text));
  log.append(div);
  log.scrollTop = log.scrollHeight;
}

// --- sending and streaming -----------------------------------------------------

async function send(text) {
  if (state.running || !text.trim()) return;
  if (!state.chatId) state.chatId = newId();
  const user = { id: newId(), role: 'user', parts: [{ type: 'text', text }] };
  const answer = { id: newId(), role: 'assistant', parts: [], metadata: {}, streaming: true };
  state.messages.push(user, answer);
  renderLog();
  const el = $('log').lastElementChild;
  const ctl = new AbortController();
  state.running = ctl;
  busy(true);
  // A stored chat holds the history: only the new message is sent.
  const messages = state.store ? [user] : state.messages.slice(0, -1);
  let frame = 0;
  const paint = () => {
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      fillMessage(el, answer);
      $('log').scrollTop = $('log').scrollHeight;
    });
  };
  try {
    const r = await api('/api/chat', {
      method: 'POST',
      body: JSON.stringify({ id: state.chatId, messages, trigger: 'submit-message' }),
      signal: ctl.signal,
    });
    if (!r.ok) {
      answer.metadata.error = await errorText(r);
    } else {
      await readStream(r, (part) => { apply(answer, part); paint(); });
    }
  } catch (e) {
    if (e instanceof SignInNeeded) answer.metadata.error = 'Sign in to talk to the agent.';
    else if (e.name === 'AbortError') answer.metadata.stopped = 'user';
    else answer.metadata.error = 'Could not reach the robby server: ' + e.message;
  } finally {
    cancelAnimationFrame(frame);
    answer.streaming = false;
    fillMessage(el, answer);
    state.running = null;
    busy(false);
  }
  if (state.store) {
    location.hash = state.chatId;
    await loadChats();
    const c = state.chats.find((x) => x.id === state.chatId);
    if (c) $('title').textContent = c.title;
  }
}

// readStream reads server-sent events, each "data: <JSON>", to [DONE].
async function readStream(r, onPart) {
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        onPart(JSON.parse(data));
      }
    }
  }
}

// apply folds one UI message stream part into the answer.
function apply(m, p) {
  const find = (id) => m.parts.find((x) => x.id === id || (x.toolCallId && x.toolCallId === id));
  const notices = (m.metadata.notices ||= {});
  switch (p.type) {
    case 'text-start': case 'reasoning-start':
      m.parts.push({ type: p.type.replace('-start', ''), id: p.id, text: '' });
      break;
    case 'text-delta': case 'reasoning-delta': {
      const part = find(p.id);
      if (part) part.text += p.delta;
      break;
    }
    case 'tool-input-start':
      m.parts.push({ type: 'dynamic-tool', toolCallId: p.toolCallId, toolName: p.toolName, state: 'input-streaming', inputText: '' });
      break;
    case 'tool-input-delta': {
      const part = find(p.toolCallId);
      if (part) part.inputText += p.inputTextDelta;
      break;
    }
    case 'tool-input-available': {
      let part = find(p.toolCallId);
      if (!part) m.parts.push(part = { type: 'dynamic-tool', toolCallId: p.toolCallId, toolName: p.toolName });
      Object.assign(part, { state: 'input-available', input: p.input });
      break;
    }
    case 'tool-output-available':
      Object.assign(find(p.toolCallId) || {}, { state: 'output-available', output: p.output });
      break;
    case 'tool-output-error':
      Object.assign(find(p.toolCallId) || {}, { state: 'output-error', errorText: p.errorText });
      break;
    case 'data-progress': {
      const n = p.data;
      const of = n.total ? `${n.progress}/${n.total}` : `${n.progress}`;
      notices[`${n.server}/${n.tool}`] = `${n.tool}: ${of}${n.message ? ' · ' + n.message : ''}`;
      break;
    }
    case 'data-log':
      notices[`log/${p.data.server}`] = `${p.data.server} (${p.data.level}): ${p.data.message}`;
      break;
    case 'data-compaction':
      notices.compaction = `The conversation was shortened to fit the model's context (${p.data.tokensBefore} → ${p.data.tokensAfter} tokens).`;
      break;
    case 'data-agent': {
      const part = find(p.data.path[0]);
      if (part && p.data.kind === 'text') part.nested = (part.nested || '') + p.data.delta;
      if (part && p.data.kind === 'tool-call') part.nested = (part.nested || '') + `\n→ ${p.data.toolCall.name} ${p.data.toolCall.arguments}\n`;
      break;
    }
    case 'error':
      m.metadata.error = p.errorText;
      break;
    case 'finish':
      Object.assign(m.metadata, p.messageMetadata || {});
      break;
  }
}

function busy(on) {
  $('send').hidden = on;
  $('stop').hidden = !on;
}

// --- the page ----------------------------------------------------------------

function closeSideOnPhone() {
  if (matchMedia('(max-width: 700px)').matches) {
    $('side').classList.add('collapsed');
    $('toggle-side').setAttribute('aria-expanded', 'false');
  }
}

function wire() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('prompt').value;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => state.running?.abort());
  $('new-chat').addEventListener('click', newChat);
  $('sign-in-form').addEventListener('submit', submitSignIn);
  $('sign-in').addEventListener('cancel', (e) => e.preventDefault());
  $('sign-out').addEventListener('click', signOut);
  $('toggle-side').addEventListener('click', () => {
    const collapsed = $('side').classList.toggle('collapsed');
    $('toggle-side').setAttribute('aria-expanded', String(!collapsed));
  });
  $('chats').addEventListener('keydown', (e) => {
    const items = [...$('chats').querySelectorAll('.open')];
    const i = items.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') { e.preventDefault(); items[Math.min(i + 1, items.length - 1)]?.focus(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); items[Math.max(i - 1, 0)]?.focus(); }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.running) { e.preventDefault(); state.running.abort(); }
    if (e.altKey && (e.key === 'n' || e.key === 'N')) { e.preventDefault(); newChat(); }
    if (e.key === 'F2' && state.store && state.chatId) { e.preventDefault(); rename(state.chatId); }
  });
}

async function start() {
  if (!(await loadChats())) return;
  $('sign-out').hidden = !state.token;
  const id = decodeURIComponent(location.hash.slice(1));
  if (state.store && id) await openChat(id);
  else newChat();
  api('/v1/models').then((r) => r.ok ? r.json() : null).then((j) => {
    if (j && j.data && j.data[0]) $('model').textContent = j.data[0].id;
  }).catch(() => {});
}

wire();
renderLog();
start();
