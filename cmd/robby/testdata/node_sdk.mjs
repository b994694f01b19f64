// node_sdk.mjs holds what the Node clients of node_test.go share: loading
// the OpenAI Node SDK and reporting steps.
//
// OPENAI_NODE_SDK is the SDK's package directory (.ci/install-mcp.sh puts it
// in .bench/openai/node_modules/openai); without it, `import "openai"`
// resolves it from the script's location as usual.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// report writes one step, "@@<step> <JSON>", to stderr.
export function report(step, value) {
  process.stderr.write(`@@${step} ${JSON.stringify(value)}\n`);
}

// status returns the HTTP status of a call that must fail.
export async function status(call) {
  try {
    await call();
  } catch (err) {
    if (err?.status) return err.status;
    throw err;
  }
  return 200;
}

export function check(ok, what) {
  if (!ok) throw new Error(`unexpected answer: ${what}`);
}

// entry picks the ESM file of an exports condition object.
function entry(x) {
  if (typeof x === 'string') return x;
  if (x && typeof x === 'object') return entry(x.import) ?? entry(x.node) ?? entry(x.default);
  return undefined;
}

// loadSDK returns the SDK's module and its version ('' when imported by name).
export async function loadSDK() {
  const dir = process.env.OPENAI_NODE_SDK;
  if (!dir) {
    return { sdk: await import('openai'), version: '' };
  }
  const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'));
  const main = entry(pkg.exports?.['.'] ?? pkg.exports) ?? pkg.module ?? pkg.main ?? 'index.js';
  const sdk = await import(pathToFileURL(path.resolve(dir, main)).href);
  return { sdk, version: pkg.version };
}

// loadPackage imports package name (its subpath sub, '.' by default) from
// the node_modules directory modules.
export async function loadPackage(modules, name, sub = '.') {
  const dir = path.join(modules, name);
  const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'));
  const exp = pkg.exports?.[sub] ?? (sub === '.' ? pkg.exports : undefined);
  const main = entry(exp) ?? (sub === '.' ? pkg.module ?? pkg.main ?? 'index.js' : sub);
  return import(pathToFileURL(path.resolve(dir, main)).href);
}
