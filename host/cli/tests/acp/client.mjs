// A small ACP client on the official TypeScript SDK (@agentclientprotocol/sdk),
// driving `goat acp` for host/cli/tests/all/acp.rs. It is the editor's side:
// it starts the agent, runs the steps of a scenario, answers permission
// requests as the scenario says, and prints one JSON transcript on stdout.
//
// Usage: node client.mjs SDK_DIR SCENARIO_JSON
//   SDK_DIR: the directory holding node_modules/@agentclientprotocol/sdk
//   SCENARIO_JSON: {"agent": [program, ...args], "cwd": dir,
//                   "steps": [...], "permissions": [...]}
// Steps: {"op": "initialize"} | {"op": "new", "cwd"?, "mcpServers"?}
//   | {"op": "load", "sessionId"?, "cwd"?} | {"op": "prompt", "text"}
//   | {"op": "set_mode", "modeId"}
//   (a prompt may say "cancelOnUpdate": KIND to send session/cancel when the
//   first update of that kind arrives)
// Permissions, one per request, in order: an optionId to select,
//   "cancelled" to answer cancelled, or "cancel-turn" to send
//   session/cancel first and then answer cancelled (as the spec says a
//   client must).

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const acp = await import(
  pathToFileURL(
    path.join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js"),
  ).href
);

const transcript = [];
const permissions = [...(scenario.permissions ?? [])];
let sessionId = null;
// A prompt step's `cancelOnUpdate`: the first update of that kind sends
// session/cancel (the editor's stop button).
let cancelOn = null;

const [program, ...args] = scenario.agent;
const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp
  .client({ name: "goat-test-client" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    transcript.push({ type: "update", params });
    if (cancelOn !== null && params.update.sessionUpdate === cancelOn) {
      cancelOn = null;
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent }) => {
    const answer = permissions.shift() ?? "cancelled";
    transcript.push({ type: "permission", params, answer });
    if (answer === "cancel-turn") {
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    if (answer === "cancelled") {
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: answer } };
  });

async function step(agent, s) {
  switch (s.op) {
    case "initialize":
      return agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      });
    case "new": {
      const r = await agent.request(acp.methods.agent.session.new, {
        cwd: s.cwd ?? scenario.cwd,
        mcpServers: s.mcpServers ?? [],
      });
      sessionId = r.sessionId;
      return r;
    }
    case "load": {
      sessionId = s.sessionId ?? sessionId;
      return agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: s.cwd ?? scenario.cwd,
        mcpServers: [],
      });
    }
    case "prompt":
      cancelOn = s.cancelOnUpdate ?? null;
      return agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: s.text }],
      });
    case "set_mode":
      return agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: s.modeId });
    default:
      throw new Error(`unknown step ${s.op}`);
  }
}

await app.connectWith(stream, async (agent) => {
  for (const s of scenario.steps) {
    try {
      const result = await step(agent, s);
      transcript.push({ type: "response", op: s.op, result: result ?? null });
    } catch (e) {
      transcript.push({
        type: "error",
        op: s.op,
        error: { code: e.code ?? null, message: String(e.message ?? e), data: e.data ?? null },
      });
    }
  }
});
child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", (c, sig) => resolve(c ?? sig)));
process.stdout.write(JSON.stringify({ transcript, agentExit: code }) + "\n");
