// node_client.mjs talks to `robby serve` through the official OpenAI Node
// SDK (npm openai), as any third-party client would. node_test.go runs it.
//
//	OPENAI_API_KEY=token [OPENAI_NODE_SDK=/path/to/node_modules/openai] \
//	  node node_client.mjs BASE_URL MODEL QUESTION
//
// OPENAI_NODE_SDK is the SDK's package directory (.ci/install-mcp.sh puts it
// in .bench/openai/node_modules/openai); without it, `import "openai"`
// resolves it from the script's location as usual.
//
// stdout: the streamed answer to QUESTION, each content delta written as it
// arrives, and nothing else.
// stderr: one line per step, "@@<step> <JSON>", ending with "@@ok {}".
// Any error, or an answer of the wrong shape, exits 1.
import { check, loadSDK, report } from './node_sdk.mjs';
import { performance } from 'node:perf_hooks';

const [baseURL, model, question] = process.argv.slice(2);
if (!baseURL || !model || !question) {
  console.error('usage: node node_client.mjs BASE_URL MODEL QUESTION (API key in OPENAI_API_KEY)');
  process.exit(2);
}
const apiKey = process.env.OPENAI_API_KEY ?? '';

async function main() {
  const { sdk, version } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  report('sdk', { version, node: process.version });
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

  // 1. A streamed answer, with the usage chunk asked for.
  {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let chunks = 0, deltas = 0, text = '', role = null, finish = null, usage = null;
    const ids = new Set(), models = new Set(), objects = new Set();
    let first = 0, last = 0;
    for await (const chunk of stream) {
      chunks++;
      ids.add(chunk.id);
      models.add(chunk.model);
      objects.add(chunk.object);
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        const d = choice.delta ?? {};
        if (d.role) role = d.role;
        if (d.content) {
          process.stdout.write(d.content);
          deltas++;
          text += d.content;
          last = performance.now();
          if (deltas === 1) first = last;
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    report('stream', {
      finish_reason: finish, usage, chunks, content_deltas: deltas, text, role,
      ids: [...ids], models: [...models], objects: [...objects],
      spread_ms: Math.round(last - first),
    });
  }

  // 2. A plain answer.
  {
    const res = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: `${question} (no streaming)` }],
    });
    const choice = res.choices[0];
    check(choice, 'a completion without choices');
    report('plain', {
      object: res.object, model: res.model, finish_reason: choice.finish_reason,
      role: choice.message.role, content: choice.message.content, usage: res.usage,
    });
  }

  // 3. A tool of the client's: the call comes back to the client, which
  // runs it and sends the result for the final answer. The call is streamed
  // through the SDK's ChatCompletionStream, which assembles the tool-call
  // deltas and rejects malformed ones.
  {
    const tools = [{
      type: 'function',
      function: { name: 'get_location', description: "The user's location", parameters: { type: 'object', properties: {} } },
    }];
    const messages = [{ role: 'user', content: 'Where am I?' }];
    const stream = client.chat.completions.stream({ model, messages, tools, stream_options: { include_usage: true } });
    let chunks = 0;
    for await (const _ of stream) chunks++;
    const completion = await stream.finalChatCompletion();
    const choice = completion.choices[0];
    const calls = (choice.message.tool_calls ?? []).map((c) => ({
      id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments,
    }));
    report('tool_call', { finish_reason: choice.finish_reason, tool_calls: calls, content: choice.message.content ?? null, chunks });
    check(choice.finish_reason === 'tool_calls' && calls.length === 1 && calls[0].name === 'get_location',
      `expected one get_location call, got ${JSON.stringify(choice)}`);
    const call = calls[0];
    JSON.parse(call.arguments || '{}'); // the arguments are JSON
    messages.push(
      { role: 'assistant', content: choice.message.content ?? null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] },
      { role: 'tool', tool_call_id: call.id, content: 'Lisbon, Portugal' },
    );
    const res = await client.chat.completions.create({ model, messages, tools });
    report('tool_answer', {
      finish_reason: res.choices[0].finish_reason, content: res.choices[0].message.content,
      tool_calls: res.choices[0].message.tool_calls ?? [],
    });
  }

  // 4. The models list, walked with the SDK's pagination.
  {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    report('models', { ids });
  }

  // 5. A wrong key is refused, as the SDK's AuthenticationError.
  {
    const wrong = new OpenAI({ baseURL, apiKey: `not-${apiKey}`, maxRetries: 0, timeout: 60_000 });
    let refused = null;
    try {
      await wrong.models.list();
    } catch (err) {
      if (!(err instanceof OpenAI.AuthenticationError)) throw err;
      refused = { status: err.status, code: err.code ?? null, type: err.type ?? null, message: err.message };
    }
    check(refused, 'a wrong API key was accepted');
    report('auth', refused);
  }

  report('ok', {});
}

main().catch((err) => {
  console.error(`node_client: ${err?.stack ?? err}`);
  process.exit(1);
});
