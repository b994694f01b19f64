// node_team.mjs talks to `robby serve -agents team.json -store FILE`
// through the official OpenAI Node SDK's Responses API. node_team_test.go
// runs it twice: "first" before the server is SIGKILLed, "again" after it
// was started again on the same store.
//
//	OPENAI_API_KEY=token OTHER_API_KEY=token-of-another-user \
//	  [OPENAI_NODE_SDK=/path/to/node_modules/openai] node node_team.mjs BASE_URL MODEL first
//	... node node_team.mjs BASE_URL MODEL again ADA_RESPONSE_ID EVE_RESPONSE_ID
//
// stderr: one line per step, "@@<step> <JSON>", ending with "@@ok {}".
// Any error exits 1.
import { check, loadSDK, report, status } from './node_sdk.mjs';

const [baseURL, model, phase, adaID, eveID] = process.argv.slice(2);
if (!baseURL || !model || !['first', 'again'].includes(phase)) {
  console.error('usage: node node_team.mjs BASE_URL MODEL first|again [ADA_RESPONSE_ID EVE_RESPONSE_ID]');
  process.exit(2);
}

// shape is what a response says: its id, and each output item's type,
// agent (robby's field) and text.
function shape(r) {
  return {
    id: r.id, status: r.status, text: r.output_text,
    items: r.output.map((o) => ({ type: o.type, agent: o.agent ?? '', name: o.name ?? '',
      text: (o.content ?? []).map((c) => c.text).join('') })),
  };
}

async function main() {
  const { sdk } = await loadSDK();
  const OpenAI = sdk.default ?? sdk.OpenAI;
  const ada = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0, timeout: 60_000 });
  const eve = new OpenAI({ baseURL, apiKey: process.env.OTHER_API_KEY, maxRetries: 0, timeout: 60_000 });
  if (phase === 'first') {
    // triage hands over to billing, which answers.
    const refund = await ada.responses.create({ model, input: 'Refund order 7, please.' });
    report('refund', shape(refund));
    // The next response goes straight to billing.
    const next = await ada.responses.create({ model, input: 'And order 8?', previous_response_id: refund.id });
    report('next', shape(next));
    // Another user starts with triage, and cannot read or continue Ada's.
    const other = await eve.responses.create({ model, input: 'Hello.' });
    report('other', { ...shape(other),
      read: await status(() => eve.responses.retrieve(next.id)),
      continued: await status(() => eve.responses.create({ model, input: 'Me too.', previous_response_id: next.id })) });
  } else {
    check(adaID && eveID, 'again needs the responses to continue');
    const after = await ada.responses.create({ model, input: 'And order 9?', previous_response_id: adaID });
    report('after', shape(after));
    const otherAfter = await eve.responses.create({ model, input: 'Still there?', previous_response_id: eveID });
    report('other_after', shape(otherAfter));
  }
  report('ok', {});
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
