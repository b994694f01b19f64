// Counts the tokens of text files with real tokenizers, for the tests of
// robby's estimate. For each file: the whole text, then each of its
// paragraphs (split on blank lines), in o200k_base (GPT-4o) and
// cl100k_base (GPT-4, GPT-3.5).
const fs = require('fs');
const path = require('path');
const enc = {
  o200k_base: require('gpt-tokenizer/encoding/o200k_base'),
  cl100k_base: require('gpt-tokenizer/encoding/cl100k_base'),
};
const out = {};
for (const f of process.argv.slice(2)) {
  const text = fs.readFileSync(f, 'utf8');
  const paras = text.split('\n\n').filter((p) => p.trim() !== '');
  const counts = {};
  for (const [name, e] of Object.entries(enc)) {
    counts[name] = { text: e.encode(text).length, paragraphs: paras.map((p) => e.encode(p).length) };
  }
  out[path.basename(f)] = counts;
}
process.stdout.write(JSON.stringify(out) + '\n');
