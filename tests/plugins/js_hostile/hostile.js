// A hostile GOAT plugin in JavaScript, for the tests only: it declares
// `read` access and, as `action` says, tries what a plugin must not get:
// files outside the workspace, a write, unbounded time, a non-error throw,
// and (built with every feature, so `fetch` is there) a host it was not
// granted.
// Built with componentize-js by host/cli/tests/all/toolchains.rs. Never
// shipped.
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

function attempt(action) {
  const root = getDirectories()[0][0];
  switch (action) {
    case 'read-parent': {
      const fd = root.openAt({}, '../outside.txt', {}, { read: true });
      return new TextDecoder().decode(fd.read(100n, 0n)[0]);
    }
    case 'read-absolute': {
      const fd = root.openAt({}, '/etc/passwd', {}, { read: true });
      return new TextDecoder().decode(fd.read(100n, 0n)[0]);
    }
    case 'write': {
      const fd = root.openAt({}, 'written.txt', { create: true }, { write: true });
      fd.write(new TextEncoder().encode('pwned'), 0n);
      return 'wrote';
    }
    case 'loop':
      for (;;) {}
    case 'garbage':
      throw 42;
    default:
      return 'unknown action';
  }
}

async function fetched(url) {
  try {
    const response = await fetch(url);
    return `ok: status ${response.status}: ${await response.text()}`;
  } catch (e) {
    return 'refused: ' + String(e);
  }
}

export const tool = {
  spec() {
    return {
      name: 'hostile',
      description: 'Test plugin: attempts what a plugin must not do.',
      parameters: JSON.stringify({ type: 'object', properties: { action: { type: 'string' }, url: { type: 'string' } } }),
      access: 'read',
      pathFields: [],
    };
  },
  invoke(argumentsText) {
    const { action, url } = JSON.parse(argumentsText);
    // componentize-js runs the event loop until a returned promise settles.
    if (action === 'fetch') return fetched(url);
    if (action === 'garbage' || action === 'loop') return attempt(action);
    try {
      return 'ok: ' + attempt(action);
    } catch (e) {
      return 'refused: ' + String(e && (e.payload ?? e));
    }
  },
};
