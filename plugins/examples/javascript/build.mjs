// Builds wc.js into a GOAT plugin with componentize-js (StarlingMonkey):
//
//   node build.mjs WIT_DIR OUT.wasm [SOURCE.js] [--all-features]
//
// Every optional feature is off (random, stdio, clocks, http, fetch-event):
// the tool needs none, and each would add imports. The component still
// imports wasi:cli/stdin, stdout and stderr (its preview1 adapter), which
// GOAT gives a plugin empty and captured.
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const allFeatures = args.includes('--all-features');
const [witPath, out, source] = args.filter((a) => a !== '--all-features');
if (!witPath || !out) {
  console.error('usage: node build.mjs WIT_DIR OUT.wasm [SOURCE.js] [--all-features]');
  process.exit(2);
}
const { component } = await componentize({
  sourcePath: source ?? fileURLToPath(new URL('wc.js', import.meta.url)),
  witPath,
  worldName: 'file-tool',
  disableFeatures: allFeatures ? [] : ['random', 'stdio', 'clocks', 'http', 'fetch-event'],
});
await writeFile(out, component);
console.log(`${out}: ${component.length} bytes`);
