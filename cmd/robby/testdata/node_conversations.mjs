// node_conversations.mjs uses the Conversations API of `robby serve -store`
// through the official OpenAI Node SDK: a conversation created with items
// and metadata, items listed and added, a response run in it, another
// user kept out, the conversation deleted. node_responses_test.go runs it.
//
//	OPENAI_API_KEY=token OTHER_API_KEY=token-of-another-user \
//	  [OPENAI_NODE_SDK=/path/to/node_modules/openai] node node_conversations.mjs BASE_URL MODEL
//
// stderr: one line per step, "@@<step> <JSON>", ending with "@@ok {}".
import { check, loadSDK, report, status } from './node_sdk.mjs';

const [baseURL, model] = process.argv.slice(2);

const texts = (items) => items.map((it) => `${it.role}: ${it.content.map((c) => c.text).join('')}`);

async function main() {
  const { sdk } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });
  const other = new OpenAI({ baseURL, apiKey: process.env.OTHER_API_KEY, maxRetries: 0 });

  const conv = await client.conversations.create({
    items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }],
    metadata: { topic: 'names' },
  });
  check(conv.object === 'conversation', `object ${conv.object}`);
  report('create', { id: conv.id, metadata: conv.metadata });

  const added = await client.conversations.items.create(conv.id, {
    items: [{ type: 'message', role: 'assistant', content: 'Hello Ada.' }],
  });
  report('add', { items: added.data.length, first: added.first_id === added.data[0].id });

  const answer = await client.responses.create({ model, input: 'What is my name?', conversation: conv.id });
  report('respond', { text: answer.output_text, conversation: answer.conversation?.id });

  const all = [];
  for await (const item of client.conversations.items.list(conv.id, { order: 'asc', limit: 2 })) all.push(item);
  report('list', { items: texts(all) });

  report('other', {
    get: await status(() => other.conversations.retrieve(conv.id)),
    list: await status(() => other.conversations.items.list(conv.id)),
    add: await status(() => other.conversations.items.create(conv.id, { items: [{ role: 'user', content: 'x' }] })),
    respond: await status(() => other.responses.create({ model, input: 'x', conversation: conv.id })),
    delete: await status(() => other.conversations.delete(conv.id)),
  });

  const deleted = await client.conversations.delete(conv.id);
  report('delete', { deleted: deleted.deleted, after: await status(() => client.conversations.retrieve(conv.id)) });
  report('ok', {});
}

main().catch((err) => {
  console.error(err?.stack ?? err);
  process.exit(1);
});
