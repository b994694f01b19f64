// The chat page of robby serve: it speaks the Vercel AI SDK's UI message
// stream (POST /api/chat), reads the user's stored chats (/api/chats) and
// offers the MCP servers' prompts as starters (/api/prompts).
// Model output is hostile input: Markdown goes through marked, then
// DOMPurify; tool arguments and results are set as text, never as HTML.
// Highlighted code is sanitized as well.
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
  prompts: [],    // the MCP servers' prompts, offered in an empty chat
  editing: false, // the last question is being edited
  opening: null,  // start's promise, until the page's first chat is open
  queued: false,  // a question waits for that chat
};

class SignInNeeded extends Error {}

// Links open in a new tab, without telling the page where they came from.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

// markdown renders an answer. Forms and their controls are dropped: an answer
// has no business posting anything, nor reloading the page.
function markdown(text) {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true }),
    { FORBID_TAGS: ['form', 'button', 'textarea', 'select'] });
}

// highlighter loads highlight.js and its light and dark themes the first
// time an answer holds code: nothing of it holds up the page's first paint.
let hljs = null;
function highlighter() {
  if (hljs) return hljs;
  for (const [file, scheme] of [['github.min.css', 'light'], ['github-dark.min.css', 'dark']]) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = '/assets/vendor/' + file;
    link.media = `(prefers-color-scheme: ${scheme})`;
    document.head.append(link);
  }
  hljs = import('./vendor/highlight.min.js').then((m) => m.default);
  return hljs;
}

// codeBlocks gives each code block of el a bar with its language and a copy
// button, and highlights it once the answer is complete.
function codeBlocks(el, done) {
  for (const code of el.querySelectorAll('pre > code')) {
    const pre = code.parentElement;
    const lang = ([...code.classList].find((c) => c.startsWith('language-')) || '').slice(9);
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const name = document.createElement('span');
    name.textContent = lang || 'code';
    const copy = button('Copy', 'copy', () => copyText(code.textContent, copy));
    copy.setAttribute('aria-label', 'Copy the code');
    bar.append(name, copy);
    const box = document.createElement('div');
    box.className = 'code';
    pre.replaceWith(box);
    box.append(bar, pre);
    if (done) highlight(code, lang);
  }
}

async function highlight(code, lang) {
  const hl = await highlighter().catch(() => null);
  if (!hl || !code.isConnected) return;
  const text = code.textContent;
  const out = lang && hl.getLanguage(lang) ? hl.highlight(text, { language: lang }) : hl.highlightAuto(text);
  code.innerHTML = DOMPurify.sanitize(out.value);
  code.classList.add('highlighted');
}

// copyText puts text on the clipboard, and says so on the button. A page
// served over plain HTTP from another host has no clipboard API: the
// selection is copied instead.
async function copyText(text, btn) {
  try {
    if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(text);
    else fallbackCopy(text);
    btn.textContent = 'Copied';
  } catch {
    btn.textContent = 'Copy failed';
  }
  setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
}

function fallbackCopy(text) {
  const t = document.createElement('textarea');
  t.value = text;
  t.setAttribute('readonly', '');
  t.className = 'visually-hidden';
  document.body.append(t);
  t.select();
  const ok = document.execCommand('copy');
  t.remove();
  if (!ok) throw new Error('copy refused');
}

// api calls the server with the bearer token; a 401 asks for sign-in.
async function api(path, opts = {}) {
  const headers = { ...(opts.headers || {}) };
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { ...opts, headers });
  if (r.status === 401) {
    // Without a token yet, this is the first visit: no error to show.
    signIn(state.token ? 'The server did not accept the saved token. Paste it again.' : '');
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

// candidates are the bearer tokens a pasted value may be. -token USER:TOKEN
// gives alice the token TOKEN: the part after the first colon is tried
// first, then the value whole (a token of -token-file may hold a colon).
function candidates(value) {
  const i = value.indexOf(':');
  return i > 0 && i < value.length - 1 ? [value.slice(i + 1), value] : [value];
}

async function submitSignIn(ev) {
  ev.preventDefault();
  const value = $('token').value.trim();
  if (!value) return;
  let token = '';
  for (const c of candidates(value)) {
    const r = await fetch('/api/chats', { headers: { Authorization: 'Bearer ' + c } }).catch(() => null);
    if (!r) return signIn('Could not reach the robby server.');
    if (r.status !== 401) { token = c; break; }
  }
  if (!token) return signIn('That token was not accepted. Paste the TOKEN of -token USER:TOKEN, or the whole of it.');
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

// el makes an element, with its class and text when given.
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
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
  state.editing = false;
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
  state.editing = false;
  history.replaceState(null, '', location.pathname);
  $('title').textContent = 'New chat';
  renderChats();
  renderLog();
  closeSideOnPhone();
  $('prompt').focus();
}

// --- the conversation --------------------------------------------------------

function renderLog() {
  const log = $('log');
  log.replaceChildren();
  if (state.messages.length === 0) log.append(emptyChat());
  for (const m of state.messages) log.append(renderMessage(m));
  actions();
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
    body.textContent = userText(m);
  } else {
    for (const p of m.parts) {
      const el = renderPart(p, m.streaming);
      if (el) body.append(el);
    }
    const meta = m.metadata || {};
    for (const n of Object.values(meta.notices || {})) body.append(note(n));
    if (m.streaming && !meta.error) (body.lastElementChild || body).classList.add('cursor');
    if (meta.error) body.append(errorBox(meta.error));
    if (meta.stopped) body.append(errorBox(stoppedText(meta.stopped)));
    if (meta.usage) body.append(usageLine(meta.usage, meta.model, meta.agent));
  }
  div.replaceChildren(body);
}

function userText(m) {
  return m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

// failed tells an answer that did not end well: an error, or stopped.
function failed(m) {
  const meta = m.metadata || {};
  return Boolean(meta.error || meta.stopped);
}

// actions puts the buttons of the last exchange under it: edit the last
// question; copy, regenerate or (after a failure) retry the last answer.
function actions() {
  const log = $('log');
  log.querySelectorAll('.actions').forEach((a) => a.remove());
  if (state.running || state.editing) return;
  const msgs = state.messages;
  const last = msgs[msgs.length - 1];
  if (!last || last.role !== 'assistant') return;
  const q = msgs[msgs.length - 2];
  const at = (m) => log.querySelector(`.msg[data-id="${CSS.escape(m.id)}"]`);
  if (q && q.role === 'user' && at(q)) {
    const bar = actionBar();
    bar.append(button('Edit', 'edit', () => edit(q)));
    at(q).append(bar);
  }
  const bar = actionBar();
  const text = last.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n\n');
  if (text) {
    const copy = button('Copy', 'copy', () => copyText(text, copy));
    copy.setAttribute('aria-label', 'Copy the answer');
    bar.append(copy);
  }
  if (q && q.role === 'user') {
    bar.append(failed(last)
      ? button('Retry', 'retry', () => regenerate())
      : button('Regenerate', 'regenerate', () => regenerate()));
  }
  at(last)?.append(bar);
}

function actionBar() {
  const d = document.createElement('div');
  d.className = 'actions';
  return d;
}

// emptyChat greets a new chat, with the MCP servers' prompts as starters.
function emptyChat() {
  const d = document.createElement('div');
  d.className = 'empty';
  const p = document.createElement('p');
  p.textContent = 'Ask the agent anything. Its tool calls show here as they run.';
  d.append(p);
  if (state.prompts.length) {
    const box = el('div', 'starters');
    const h = el('h2', '', 'Or start from a prompt');
    const list = el('div', 'starter-list');
    for (const pr of state.prompts) {
      const b = button(pr.title || pr.name, 'starter', () => usePrompt(pr, box));
      if (pr.description) {
        const small = document.createElement('small');
        small.textContent = pr.description;
        b.append(small);
      }
      b.dataset.name = pr.name;
      list.append(b);
    }
    box.append(h, list);
    d.append(box);
  }
  return d;
}

async function loadPrompts() {
  try {
    const r = await api('/api/prompts');
    if (!r.ok) return;
    state.prompts = (await r.json()).data || [];
  } catch {
    return; // starters are a convenience: the chat works without them
  }
  if (state.messages.length === 0 && !state.running) renderLog();
}

// usePrompt asks for the prompt's arguments, if it takes any, then puts
// the filled-in prompt in the composer, to read and send.
function usePrompt(pr, box) {
  const args = pr.arguments || [];
  if (args.length === 0) return fillPrompt(pr, {}, box);
  const form = document.createElement('form');
  form.className = 'prompt-args';
  const h = document.createElement('h2');
  h.textContent = pr.title || pr.name;
  form.append(h);
  for (const a of args) {
    const id = 'arg-' + a.name;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = a.name + (a.required ? '' : ' (optional)');
    const input = document.createElement('input');
    input.id = id;
    input.name = a.name;
    input.required = Boolean(a.required);
    if (a.description) input.placeholder = a.description;
    form.append(label, input);
  }
  const err = errorBox('');
  err.hidden = true;
  const go = document.createElement('button');
  go.type = 'submit';
  go.textContent = 'Use this prompt';
  form.append(err, go, button('Cancel', 'cancel', () => renderLog()));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const values = {};
    for (const a of args) {
      const v = form.elements[a.name].value.trim();
      if (v) values[a.name] = v;
    }
    fillPrompt(pr, values, form, err);
  });
  box.replaceChildren(form);
  form.querySelector('input')?.focus();
}

async function fillPrompt(pr, values, where, err) {
  let r;
  try {
    r = await api(`/api/prompts/${encodeURIComponent(pr.server)}/${encodeURIComponent(pr.name)}`,
      { method: 'POST', body: JSON.stringify({ arguments: values }) });
  } catch (e) {
    if (!(e instanceof SignInNeeded)) showError('Could not reach the robby server.');
    return;
  }
  if (!r.ok) {
    const text = await errorText(r);
    if (err) { err.textContent = text; err.hidden = false; } else showError(text);
    return;
  }
  $('prompt').value = (await r.json()).text;
  if (where.isConnected && err) renderLog();
  $('prompt').focus();
}

function renderPart(p, streaming) {
  if (p.type === 'text') {
    const d = document.createElement('div');
    d.className = 'md';
    d.innerHTML = markdown(p.text);
    codeBlocks(d, !streaming);
    return d;
  }
  if (p.type === 'reasoning') {
    const d = el('details', 'reasoning');
    d.append(el('summary', '', 'Reasoning'), el('div', 'text', p.text));
    return d;
  }
  if (p.type === 'dynamic-tool' || p.type.startsWith('tool-')) return renderTool(p, streaming);
  if (p.type === 'data-handoff') return note(`${p.data.to} answers from here (handed over by ${p.data.from}: ${p.data.reason})`);
  return null;
}

// toolStatus is a tool call's state in words, and its class: running, done
// or failed. A call left running by an answer that ended never finished.
function toolStatus(p, streaming) {
  switch (p.state) {
    case 'output-available': return ['done', 'done'];
    case 'output-error': return ['failed', 'failed'];
    case 'input-streaming': return streaming ? ['writing arguments…', 'running'] : ['not finished', 'failed'];
    default: return streaming ? ['running…', 'running'] : ['not finished', 'failed'];
  }
}

// renderTool shows a tool call folded, its status in its summary; opening
// it shows the arguments, then the result or error.
function renderTool(p, streaming) {
  const d = document.createElement('details');
  d.className = 'tool';
  d.open = p.open ?? false;
  d.addEventListener('toggle', () => { p.open = d.open; });
  const s = document.createElement('summary');
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = p.toolName || p.type.replace(/^tool-/, '');
  const [words, cls] = toolStatus(p, streaming);
  const st = document.createElement('span');
  st.className = `state ${cls}`;
  st.textContent = words;
  d.dataset.status = cls;
  s.append(name, st);
  if (p.toolMetadata?.destructive) {
    // The tool may delete or overwrite data: its server or the program says so.
    const w = document.createElement('span');
    w.className = 'state destructive';
    w.textContent = 'destructive';
    w.title = 'This tool may delete or overwrite data.';
    s.append(w);
  }
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

// usageLine says what an answer used, and which of a team's agents gave it.
function usageLine(u, model, agent) {
  const p = document.createElement('p');
  p.className = 'usage';
  let s = `${u.promptTokens} tokens in · ${u.completionTokens} out`;
  if (agent) s = `${agent} answered · ${s}`;
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

// send asks a new question.
async function send(text) {
  if (state.running || !text.trim()) return;
  const user = { id: newId(), role: 'user', parts: [{ type: 'text', text }] };
  state.messages.push(user);
  await respond(user, 'submit-message');
}

// regenerate answers the last question again: the retry of a failed answer,
// or another take on a good one. Without a store the page holds the
// conversation: the last answer is replaced, as useChat's regenerate does. A
// stored chat keeps every message, so the question is asked again after it,
// and the page shows both, as the store holds them.
async function regenerate() {
  if (state.running) return;
  const msgs = state.messages;
  const q = msgs[msgs.length - 2];
  if (!q || q.role !== 'user') return;
  if (state.store) return send(userText(q));
  const old = msgs.pop();
  await respond(q, 'regenerate-message', old.id);
}

// edit lets the last question be changed and asked again. Without a store it
// replaces the question and its answer; a stored chat keeps both, and the
// new question follows them.
function edit(q) {
  const el = $('log').querySelector(`.msg[data-id="${CSS.escape(q.id)}"]`);
  if (!el || state.running) return;
  state.editing = true;
  actions();
  const form = document.createElement('form');
  form.className = 'edit';
  const t = document.createElement('textarea');
  t.value = userText(q);
  t.setAttribute('aria-label', 'Edit your question');
  t.rows = Math.min(8, t.value.split('\n').length + 1);
  const save = document.createElement('button');
  save.type = 'submit';
  save.textContent = 'Send';
  const cancel = () => { state.editing = false; renderLog(); };
  form.append(t, save, button('Cancel', 'cancel', cancel));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = t.value;
    if (!text.trim()) return;
    state.editing = false;
    if (!state.store) state.messages.splice(state.messages.indexOf(q));
    send(text);
  });
  t.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); cancel(); }
  });
  el.replaceChildren(form);
  t.focus();
  t.setSelectionRange(t.value.length, t.value.length);
}

// respond streams the agent's answer to the question user, the last of
// state.messages.
async function respond(user, trigger, messageId) {
  if (!state.chatId) state.chatId = newId();
  const answer = { id: newId(), role: 'assistant', parts: [], metadata: {}, streaming: true };
  state.messages.push(answer);
  const ctl = new AbortController();
  state.running = ctl;
  renderLog();
  const el = $('log').lastElementChild;
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
      body: JSON.stringify({ id: state.chatId, messages, trigger, ...(messageId ? { messageId } : {}) }),
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
    actions();
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
      Object.assign(part, { state: 'input-available', input: p.input, toolMetadata: p.toolMetadata });
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
    case 'data-handoff':
      m.parts.push({ type: 'data-handoff', data: p.data });
      break;
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

// On a narrow screen the chat list slides out over the conversation, from
// the ☰ button; opening a chat, the scrim or Esc closes it.
const narrow = matchMedia('(max-width: 700px)');

function showSide(open) {
  $('app').classList.toggle('side-open', open);
  $('scrim').hidden = !open;
  $('toggle-side').setAttribute('aria-expanded', String(open || !narrow.matches));
  if (open) ($('chats').querySelector('[aria-selected=true] .open') || $('new-chat')).focus();
}

function closeSideOnPhone() {
  if (narrow.matches && $('app').classList.contains('side-open')) {
    showSide(false);
    $('toggle-side').focus();
  }
}

function wire() {
  $('composer').addEventListener('submit', async (e) => {
    e.preventDefault();
    // While an answer streams, the text stays in the composer, to send after.
    if (state.running || state.queued) return;
    const text = $('prompt').value;
    $('prompt').value = '';
    // A question asked while the page opens its first chat goes to that
    // chat: opening it would otherwise stop the answer and clear the log.
    if (state.opening) {
      state.queued = true;
      await state.opening;
      state.queued = false;
    }
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
    $('app').classList.add('sliding');
    showSide(!$('app').classList.contains('side-open'));
  });
  $('scrim').addEventListener('click', closeSideOnPhone);
  narrow.addEventListener('change', () => { $('app').classList.remove('sliding'); showSide(false); });
  $('new-chat-head').addEventListener('click', newChat);
  $('chats').addEventListener('keydown', (e) => {
    const items = [...$('chats').querySelectorAll('.open')];
    const i = items.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') { e.preventDefault(); items[Math.min(i + 1, items.length - 1)]?.focus(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); items[Math.max(i - 1, 0)]?.focus(); }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.running) { e.preventDefault(); state.running.abort(); }
    else if (e.key === 'Escape' && $('app').classList.contains('side-open')) { e.preventDefault(); closeSideOnPhone(); }
    if (e.altKey && (e.key === 'n' || e.key === 'N')) { e.preventDefault(); newChat(); }
    if (e.key === 'F2' && state.store && state.chatId) { e.preventDefault(); rename(state.chatId); }
  });
}

// start loads the user's chats and opens one: the chat of the URL, or a
// new one. state.opening holds it while it runs; it never rejects.
function start() {
  state.opening = openFirstChat().catch((e) => {
    if (!(e instanceof SignInNeeded)) showError('Could not reach the robby server.');
  }).finally(() => { state.opening = null; });
  return state.opening;
}

async function openFirstChat() {
  if (!(await loadChats())) return;
  $('sign-out').hidden = !state.token;
  const id = decodeURIComponent(location.hash.slice(1));
  if (state.store && id) await openChat(id);
  else newChat();
  api('/v1/models').then((r) => r.ok ? r.json() : null).then((j) => {
    if (j && j.data && j.data[0]) $('model').textContent = j.data[0].id;
  }).catch(() => {});
  loadPrompts();
}

wire();
showSide(false);
renderLog();
start();
