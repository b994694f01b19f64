// node_frameworks.mjs drives `robby serve -store` with the agent frameworks
// people use, unchanged, each on the Responses API and on chat completions:
// OpenAI's Agents SDK (@openai/agents), the Vercel AI SDK with
// @ai-sdk/openai, and LangChain's @langchain/openai. node_frameworks_test.go
// runs it, with a scripted model behind robby.
//
//	OPENAI_API_KEY=token FRAMEWORKS=/path/to/node_modules node node_frameworks.mjs BASE_URL MODEL
//
// stderr: one line per scenario, "@@<framework>/<api>/<scenario> <JSON>",
// the JSON {"ok":true,...} or {"ok":false,"error":...}, ending with
// "@@ok {}". A scenario that fails is reported and the others go on.
import { loadPackage, report } from './node_sdk.mjs';

const [baseURL, model] = process.argv.slice(2);
const modules = process.env.FRAMEWORKS;
const apiKey = process.env.OPENAI_API_KEY;
if (!baseURL || !model || !modules) {
  console.error('usage: FRAMEWORKS=node_modules node node_frameworks.mjs BASE_URL MODEL');
  process.exit(2);
}

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

// scenario runs one scenario and reports how it went.
async function scenario(name, fn) {
  try {
    const got = await fn();
    report(name, { ok: true, got });
  } catch (err) {
    report(name, { ok: false, error: String(err?.stack ?? err).slice(0, 2000) });
  }
}

const weatherParams = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};

async function agentsSDK(OpenAI, z) {
  const agents = await loadPackage(modules, '@openai/agents');
  const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, OpenAIConversationsSession } = agents;
  setTracingDisabled(true);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  setDefaultOpenAIClient(client);
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => city,
  });
  for (const api of ['responses', 'chat_completions']) {
    setOpenAIAPI(api);
    const p = `agents/${api}`;
    const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model });
    await scenario(`${p}/plain`, async () => {
      const r = await run(agent, 'Say hello.');
      expect(r.finalOutput === 'Hello from robby.', `finalOutput ${r.finalOutput}`);
      return r.finalOutput;
    });
    await scenario(`${p}/tool`, async () => {
      const a = new Agent({ name: 'weather', instructions: 'Use your tool.', model, tools: [getWeather] });
      const r = await run(a, 'What is the weather in Paris?');
      expect(r.finalOutput === 'It is sunny in Paris.', `finalOutput ${r.finalOutput}`);
      return r.finalOutput;
    });
    await scenario(`${p}/stream`, async () => {
      const s = await run(agent, 'Say hello.', { stream: true });
      let text = '';
      for await (const chunk of s.toTextStream()) text += chunk;
      await s.completed;
      expect(text === 'Hello from robby.' && s.finalOutput === text, `streamed ${text}, final ${s.finalOutput}`);
      return text;
    });
    await scenario(`${p}/second_turn`, async () => {
      const r1 = await run(agent, 'My name is Ada.');
      const r2 = await run(agent, [...r1.history, { role: 'user', content: 'What is my name?' }]);
      expect(r2.finalOutput === 'Your name is Ada.', `finalOutput ${r2.finalOutput}`);
      return r2.finalOutput;
    });
    await scenario(`${p}/structured`, async () => {
      const a = new Agent({ name: 'cities', instructions: 'Answer about cities.', model,
        outputType: z.object({ city: z.string(), country: z.string() }) });
      const r = await run(a, 'Where is Paris?');
      expect(r.finalOutput?.city === 'Paris' && r.finalOutput?.country === 'France', `finalOutput ${JSON.stringify(r.finalOutput)}`);
      return r.finalOutput;
    });
    await scenario(`${p}/session`, async () => {
      const session = new OpenAIConversationsSession({ client });
      await run(agent, 'My name is Ada.', { session });
      const r = await run(agent, 'What is my name?', { session });
      expect(r.finalOutput === 'Your name is Ada.', `finalOutput ${r.finalOutput}`);
      const items = await session.getItems();
      expect(items.length === 4, `${items.length} items in the session`);
      return { conversation: await session.getSessionId(), items: items.length };
    });
  }
}

async function vercelAISDK(z) {
  const ai = await loadPackage(modules, 'ai');
  const { createOpenAI } = await loadPackage(modules, '@ai-sdk/openai');
  const provider = createOpenAI({ baseURL, apiKey });
  for (const api of ['responses', 'chat']) {
    const m = provider[api](model);
    const p = `aisdk/${api}`;
    await scenario(`${p}/generateText`, async () => {
      const r = await ai.generateText({ model: m, prompt: 'Say hello.', maxRetries: 0 });
      expect(r.text === 'Hello from robby.', `text ${r.text}`);
      return r.text;
    });
    await scenario(`${p}/streamText`, async () => {
      const r = ai.streamText({ model: m, prompt: 'Say hello.', maxRetries: 0 });
      let text = '';
      for await (const t of r.textStream) text += t;
      expect(text === 'Hello from robby.', `text ${text}`);
      return text;
    });
    await scenario(`${p}/tools`, async () => {
      const r = await ai.generateText({
        model: m, prompt: 'What is the weather in Paris?', maxRetries: 0, stopWhen: ai.stepCountIs(3),
        tools: { get_weather: ai.tool({ description: 'The weather in a city.', inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => city }) },
      });
      expect(r.text === 'It is sunny in Paris.', `text ${r.text}`);
      return { text: r.text, steps: r.steps.length };
    });
    await scenario(`${p}/generateObject`, async () => {
      const r = await ai.generateObject({ model: m, prompt: 'Where is Paris?', maxRetries: 0,
        schema: z.object({ city: z.string(), country: z.string() }) });
      expect(r.object.city === 'Paris' && r.object.country === 'France', `object ${JSON.stringify(r.object)}`);
      return r.object;
    });
  }
}

async function langChain(z) {
  const { ChatOpenAI } = await loadPackage(modules, '@langchain/openai');
  for (const responses of [true, false]) {
    const p = `langchain/${responses ? 'responses' : 'chat'}`;
    const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, useResponsesApi: responses, maxRetries: 0 });
    await scenario(`${p}/invoke`, async () => {
      const r = await llm.invoke('Say hello.');
      expect(r.text === 'Hello from robby.', `text ${r.text}`);
      return r.text;
    });
    await scenario(`${p}/stream`, async () => {
      let text = '';
      for await (const chunk of await llm.stream('Say hello.')) text += chunk.text;
      expect(text === 'Hello from robby.', `text ${text}`);
      return text;
    });
    await scenario(`${p}/bindTools`, async () => {
      const r = await llm.bindTools([{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city.',
        parameters: weatherParams } }]).invoke('What is the weather in Paris?');
      const call = r.tool_calls?.[0];
      expect(call?.name === 'get_weather' && call?.args?.city === 'Paris', `tool_calls ${JSON.stringify(r.tool_calls)}`);
      return call;
    });
    await scenario(`${p}/withStructuredOutput`, async () => {
      const r = await llm.withStructuredOutput(z.object({ city: z.string(), country: z.string() }), { name: 'city' })
        .invoke('Where is Paris?');
      expect(r.city === 'Paris' && r.country === 'France', `output ${JSON.stringify(r)}`);
      return r;
    });
  }
}

async function main() {
  // The test clears these; a provider made at import time (the AI SDK's
  // openai) refuses an empty OPENAI_BASE_URL.
  for (const v of ['OPENAI_BASE_URL', 'OPENAI_ORG_ID', 'OPENAI_PROJECT_ID']) {
    if (process.env[v] === '') delete process.env[v];
  }
  const { default: OpenAI } = await loadPackage(modules, 'openai');
  const { z } = await loadPackage(modules, 'zod');
  await agentsSDK(OpenAI, z);
  await vercelAISDK(z);
  await langChain(z);
  report('ok', {});
}

main().catch((err) => {
  console.error(err?.stack ?? err);
  process.exit(1);
});
