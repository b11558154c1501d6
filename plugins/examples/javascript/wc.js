// wc-like GOAT plugin in JavaScript, world goat:tool/file-tool.
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const MAX_FILES = 2000;
// 64-bit offsets as Numbers: both componentize-js (StarlingMonkey) and
// jco's QuickJS backend take a Number for a u64 (QuickJS refuses a BigInt).
const CHUNK = 65536;

function globRegex(p) {
  let out = '';
  for (let i = 0; i < p.length; ) {
    if (p.startsWith('**/', i)) { out += '(?:.*/)?'; i += 3; continue; }
    if (p.startsWith('**', i)) { out += '.*'; i += 2; continue; }
    const c = p[i++];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp('^' + out + '$');
}

function walk(root, rel, out, depth) {
  if (depth > 64 || out.length > MAX_FILES) return;
  const d = root.openAt({}, rel || '.', { directory: true }, { read: true });
  const entries = d.readDirectory();
  for (;;) {
    const e = entries.readDirectoryEntry();
    if (!e) break;
    if (e.name === '.git') continue;
    const name = rel ? `${rel}/${e.name}` : e.name;
    if (e.type === 'directory') walk(root, name, out, depth + 1);
    else if (e.type === 'regular-file') out.push(name);
  }
}

function countFile(fd) {
  let lines = 0, words = 0, bytes = 0, inWord = false, off = 0;
  for (;;) {
    const [chunk, end] = fd.read(CHUNK, off);
    off += chunk.length;
    bytes += chunk.length;
    for (const b of chunk) {
      if (b === 10) lines++;
      const space = b === 32 || (b >= 9 && b <= 13);
      if (!space && !inWord) words++;
      inWord = !space;
    }
    if (end || chunk.length === 0) return [lines, words, bytes];
  }
}

const pad = (n) => String(n).padStart(8);

function fsErr(e, what) {
  const code = e && (e.payload ?? e);
  if (code === 'no-entry') return { tag: 'not-found', val: `'${what}' does not exist` };
  if (code === 'access' || code === 'not-permitted') return { tag: 'permission-denied', val: `'${what}': permission denied` };
  return { tag: 'io', val: `'${what}': ${String(code)}` };
}

export const tool = {
  spec() {
    return {
      name: 'count',
      description: 'Count lines, words and bytes in workspace files, like `wc`. `path` is a directory (default: the root); `glob` picks files under it (default \'**\').',
      parameters: JSON.stringify({
        type: 'object',
        properties: { path: { type: 'string' }, glob: { type: 'string' } },
        additionalProperties: false,
      }),
      access: 'read',
      pathFields: ['path'],
    };
  },
  invoke(argumentsText) {
    let args;
    try { args = JSON.parse(argumentsText); } catch (e) {
      throw { tag: 'invalid-arguments', val: `arguments are not JSON: ${e}` };
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw { tag: 'invalid-arguments', val: 'arguments must be a JSON object' };
    let base = (args.path || '').replace(/^\/+|\/+$/g, '');
    if (base === '.') base = '';
    const re = globRegex(args.glob || '**');
    const dirs = getDirectories();
    if (dirs.length === 0) throw { tag: 'permission-denied', val: 'this tool was given no workspace' };
    const root = dirs[0][0];
    const files = [];
    try { walk(root, base, files, 0); } catch (e) { throw fsErr(e, base || '.'); }
    files.sort();
    const rows = []; const total = [0, 0, 0];
    for (const f of files) {
      const rel = base ? f.slice(base.length + 1) : f;
      if (!re.test(rel)) continue;
      let c;
      try {
        const fd = root.openAt({}, f, {}, { read: true });
        c = countFile(fd);
      } catch (e) { rows.push(`(skipped ${f}: ${String(e && (e.payload ?? e))})`); continue; }
      for (let i = 0; i < 3; i++) total[i] += c[i];
      rows.push(`${pad(c[0])} ${pad(c[1])} ${pad(c[2])} ${f}`);
    }
    rows.push(`${pad(total[0])} ${pad(total[1])} ${pad(total[2])} total`);
    return rows.join('\n');
  },
};
