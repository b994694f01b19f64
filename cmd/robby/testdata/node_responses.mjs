// node_responses.mjs talks to `robby serve -store` through the official
// OpenAI Node SDK's Responses API, as any third-party client would.
// node_test.go runs it.
//
//	OPENAI_API_KEY=token OTHER_API_KEY=token-of-another-user \
//	  [OPENAI_NODE_SDK=/path/to/node_modules/openai] node node_responses.mjs BASE_URL MODEL
//
// stderr: one line per step, "@@<step> <JSON>", ending with "@@ok {}".
// Any error, or an answer of the wrong shape, exits 1.
import { check, loadSDK, report, status } from './node_sdk.mjs';

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node node_responses.mjs BASE_URL MODEL (API keys in OPENAI_API_KEY and OTHER_API_KEY)');
  process.exit(2);
}

async function main() {
  const { sdk } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0, timeout: 60_000 });
  const other = new OpenAI({ baseURL, apiKey: process.env.OTHER_API_KEY, maxRetries: 0, timeout: 60_000 });

  // 1. A first response, not streamed.
  const first = await client.responses.create({ model, input: 'My name is Ada.' });
  report('first', { id: first.id, object: first.object, status: first.status, text: first.output_text, model: first.model });

  // 2. Its continuation, streamed: only the new message is sent.
  const stream = await client.responses.create({
    model, input: 'What is my name?', previous_response_id: first.id, stream: true,
  });
  const types = [];
  let deltas = '', completed = null;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') deltas += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  check(completed, 'no response.completed event');
  report('second', { types, deltas, id: completed.id, previous: completed.previous_response_id, status: completed.status,
    text: completed.output.flatMap((o) => o.content ?? []).map((c) => c.text).join('') });

  // 3. A function of the client's: its call comes back, its output goes on.
  const tools = [{ type: 'function', name: 'get_location', description: "The user's location", parameters: { type: 'object', properties: {} }, strict: false }];
  const asked = await client.responses.create({ model, input: 'Where am I?', previous_response_id: completed.id, tools });
  const call = asked.output.find((o) => o.type === 'function_call');
  check(call && call.name === 'get_location', `expected a get_location call, got ${JSON.stringify(asked.output)}`);
  const answered = await client.responses.create({
    model, previous_response_id: asked.id, tools,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Lisbon, Portugal' }],
  });
  report('tool', { call: { name: call.name, arguments: call.arguments, call_id: call.call_id }, text: answered.output_text });

  // 4. What came before the last response, oldest first, two a page; and
  // the response read back as created.
  const items = [];
  for await (const item of client.responses.inputItems.list(answered.id, { order: 'asc', limit: 2 })) {
    items.push(item.type === 'message' ? `${item.role}: ${item.content.map((c) => c.text).join('')}` : item.type);
  }
  const read = await client.responses.retrieve(answered.id);
  report('items', { items, previous: read.previous_response_id, status: read.status, total_tokens: read.usage?.total_tokens });

  // 5. Read back, as stored; another user finds nothing.
  const again = await client.responses.retrieve(first.id);
  report('retrieve', { id: again.id, text: again.output_text, other: await status(() => other.responses.retrieve(first.id)),
    other_continue: await status(() => other.responses.create({ model, input: 'And mine?', previous_response_id: first.id })) });

  // 6. Deleted, then gone.
  await client.responses.delete(first.id);
  report('delete', { after: await status(() => client.responses.retrieve(first.id)) });

  report('ok', {});
}

main().catch((err) => {
  console.error(`node_responses: ${err?.stack ?? err}`);
  process.exit(1);
});
