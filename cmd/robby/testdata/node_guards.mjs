// node_guards.mjs reads `robby serve -guards` through the official OpenAI
// Node SDK, chat completions and Responses: a streamed answer whose secret
// a guard redacts, and an answer a guard blocks. guards_test.go runs it.
//
//	OPENAI_API_KEY=token [OPENAI_NODE_SDK=/path/to/node_modules/openai] node node_guards.mjs BASE_URL MODEL
//
// stderr: one line per step, "@@<step> <JSON>", ending with "@@ok {}".
import { loadSDK, report } from './node_sdk.mjs';

const [baseURL, model] = process.argv.slice(2);

// failure returns what a call that must fail threw.
async function failure(call) {
  try {
    await call();
  } catch (err) {
    // A stream already started ends with an error event: no status.
    if (err?.code) return { status: err.status ?? 0, code: err.code, message: err.message };
    throw err;
  }
  return { status: 200 };
}

async function main() {
  const { sdk } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0, timeout: 60_000 });

  const chat = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'the key?' }] });
  let text = '';
  for await (const chunk of chat) text += chunk.choices[0]?.delta?.content ?? '';
  report('chatStream', { text });

  report('chatBlocked', await failure(async () => {
    const s = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'the beast?' }] });
    for await (const chunk of s) report('chatBlockedChunk', chunk);
  }));

  const resp = await client.responses.create({ model, input: 'the key?', stream: true });
  let deltas = '';
  for await (const e of resp) {
    if (e.type === 'response.output_text.delta') deltas += e.delta;
  }
  report('responsesStream', { deltas });

  report('responsesBlocked', await failure(async () => {
    const s = await client.responses.create({ model, input: 'the beast?', stream: true });
    for await (const e of s) if (e.type.includes('delta') || e.type.includes('output_item')) report('responsesBlockedText', e);
  }));
  report('ok', {});
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
