// A scripted editor for the tests: the official ACP TypeScript SDK's client, driving `nyz acp`
// as a child process. Usage: node acp_client.mjs SCENARIO WORKSPACE
//   ACP_SDK    the SDK's entry module (<venv>/node_modules/@agentclientprotocol/sdk/...)
//   ACP_AGENT  the agent's command line, as a JSON array
// It prints one JSON object per line of what it saw ({"step": ...}); the Python test asserts
// on them. Where the test must look at the machine mid-scenario, the script prints a step and
// waits for a line on its own stdin before going on. The SDK validates every message the
// agent sends against the protocol's schema: a malformed one fails the scenario.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const acp = await import(pathToFileURL(process.env.ACP_SDK).href);
const [scenario, workspace] = process.argv.slice(2);
const agentCommand = JSON.parse(process.env.ACP_AGENT);

const say = (step, data = {}) => process.stdout.write(JSON.stringify({ step, ...data }) + "\n");
const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitForTest = async () => (await stdinLines.next()).value;

function startAgent() {
  const child = spawn(agentCommand[0], agentCommand.slice(1), {
    cwd: workspace, stdio: ["pipe", "pipe", "inherit"],
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stream, exited };
}

// What the editor does when asked: permissions answered from a queue, files served from
// "buffers", every update recorded.
function makeClient(state) {
  return acp.client({ name: "nyzhi-tests" })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      state.updates.push(params);
      for (const waiter of state.waiters.splice(0)) waiter();
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      state.permissions.push(params);
      const optionId = state.answers.shift() ?? "deny";
      if (optionId === "cancelled") return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      state.reads.push(params);
      return { content: state.buffers[params.path] ?? "" };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      state.writes.push(params);
      state.buffers[params.path] = params.content;
      return {};
    })
    // Terminals as an editor runs them: the given argv spawned with the editor's own
    // environment plus the given one (so a variable only the editor has is offered to the
    // command), output kept within the byte limit from the end.
    .onRequest(acp.methods.client.terminal.create, async ({ params }) => {
      state.created.push(params);
      const id = `term-${state.created.length}`;
      const env = { ...process.env, EDITOR_ONLY_TOKEN: "editor-secret-41",
                    ...Object.fromEntries((params.env ?? []).map((e) => [e.name, e.value])) };
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? workspace, env });
      const term = { child, output: "", exit: null, limit: params.outputByteLimit ?? null };
      const add = (data) => {
        term.output += data.toString();
        if (term.limit !== null && Buffer.byteLength(term.output) > term.limit) {
          term.output = term.output.slice(-term.limit);
          term.truncated = true;
        }
        for (const waiter of state.waiters.splice(0)) waiter();
      };
      child.stdout.on("data", add);
      child.stderr.on("data", add);
      term.exited = new Promise((resolve) => child.on("exit", (code, signal) => {
        term.exit = { exitCode: code, signal };
        resolve(term.exit);
        for (const waiter of state.waiters.splice(0)) waiter();
      }));
      state.terminals[id] = term;
      for (const waiter of state.waiters.splice(0)) waiter();
      return { terminalId: id };
    })
    .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
      const term = state.terminals[params.terminalId];
      return { output: term.output, truncated: !!term.truncated, exitStatus: term.exit };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) =>
      state.terminals[params.terminalId].exited)
    .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
      state.killed.push(params.terminalId);
      state.terminals[params.terminalId].child.kill();
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
      state.released.push(params.terminalId);
      const term = state.terminals[params.terminalId];
      if (term.exit === null) term.child.kill();
      for (const waiter of state.waiters.splice(0)) waiter();
      return {};
    });
}

function newState() {
  return { updates: [], permissions: [], reads: [], writes: [], buffers: {}, answers: [], waiters: [],
           created: [], terminals: {}, killed: [], released: [] };
}

// Resolves once `test(state)` holds, checked whenever the editor's state changes (no sleeping).
function until(state, test) {
  return new Promise((resolve) => {
    const check = () => (test(state) ? resolve() : state.waiters.push(check));
    check();
  });
}

// Resolves once an update matching `test` has arrived (no sleeping).
function updateMatching(state, test) {
  return new Promise((resolve) => {
    const check = () => {
      const found = state.updates.find((u) => test(u.update));
      if (found) resolve(found);
      else state.waiters.push(check);
    };
    check();
  });
}

const chunks = (state, sessionId, kind) => state.updates
  .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
  .map((u) => u.update.content.text).join("");

const text = (t) => [{ type: "text", text: t }];

async function initialize(ctx, fs = false, terminal = false) {
  return ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal },
    clientInfo: { name: "nyzhi-tests", version: "1.0.0" },
  });
}

const scenarios = {
  // session/list, session/close and session/resume (stable v1): a session is prompted and
  // closed, found in the list, resumed without its history, and prompted again.
  async lifecycle(ctx, state) {
    const init = await initialize(ctx);
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.prompt,
      { sessionId: session.sessionId, prompt: text("remember the word fig") });
    const closed = await ctx.request(acp.methods.agent.session.close, { sessionId: session.sessionId });
    let afterClose = null;
    try {
      await ctx.request(acp.methods.agent.session.prompt,
        { sessionId: session.sessionId, prompt: text("still there?") });
    } catch (error) { afterClose = { code: error.code, message: error.message }; }
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workspace });
    const elsewhere = await ctx.request(acp.methods.agent.session.list, { cwd: "/" });
    const before = state.updates.length;
    const resumed = await ctx.request(acp.methods.agent.session.resume,
      { sessionId: session.sessionId, cwd: workspace, mcpServers: [] });
    const replayedOnResume = state.updates.slice(before).map((u) => u.update)
      .filter((u) => u.sessionUpdate === "user_message_chunk").length;
    const reply = await ctx.request(acp.methods.agent.session.prompt,
      { sessionId: session.sessionId, prompt: text("which word?") });
    say("lifecycle", { capabilities: init.agentCapabilities.sessionCapabilities, closed,
                       afterClose, listed, elsewhere, resumed, replayedOnResume,
                       stopReason: reply.stopReason, sessionId: session.sessionId });
  },

  // initialize, a new session, a prompt whose answer streams.
  async basic(ctx, state) {
    const init = await initialize(ctx);
    say("initialized", { result: init });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    say("session", { result: session });
    const reply = await ctx.request(acp.methods.agent.session.prompt,
      { sessionId: session.sessionId, prompt: text("say hello") });
    say("prompted", {
      stopReason: reply.stopReason,
      message: chunks(state, session.sessionId, "agent_message_chunk"),
      thought: chunks(state, session.sessionId, "agent_thought_chunk"),
      messageChunks: state.updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk").length,
      commands: state.updates.filter((u) => u.update.sessionUpdate === "available_commands_update")
        .flatMap((u) => u.update.availableCommands.map((c) => c.name)),
    });
    const help = await ctx.request(acp.methods.agent.session.prompt,
      { sessionId: session.sessionId, prompt: text("/status") });
    say("command", { stopReason: help.stopReason,
                     message: chunks(state, session.sessionId, "agent_message_chunk") });
  },

  // A tool call that asks: allowed once, then the same kind of call rejected.
  async permissions(ctx, state) {
    await initialize(ctx);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    state.answers.push("approve");
    const first = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("write a") });
    state.answers.push("deny");
    const second = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("write b") });
    say("done", {
      stopReasons: [first.stopReason, second.stopReason],
      permissions: state.permissions,
      toolUpdates: state.updates.map((u) => u.update)
        .filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update"),
      plans: state.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "plan"),
    });
  },

  // The editor's buffers: a linked file is read through fs/read_text_file, an edit comes back
  // through fs/write_text_file.
  async fs(ctx, state) {
    await initialize(ctx, true);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    const path = `${workspace}/notes.md`;
    state.buffers[path] = "UNSAVED BUFFER TEXT\n";
    state.answers.push("approve");
    const reply = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "tidy this file" },
               { type: "resource_link", uri: `file://${path}`, name: "notes.md" },
               { type: "resource", resource: { uri: `file://${workspace}/pasted.txt`,
                                               text: "EMBEDDED CONTEXT" } }],
    });
    say("done", { stopReason: reply.stopReason, reads: state.reads, writes: state.writes });
  },

  // Full trust through session/set_mode, a long bash, session/cancel while it runs; the test
  // checks the machine for the bash before the script goes on.
  async cancel(ctx, state) {
    await initialize(ctx);
    const { sessionId, modes } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full" });
    const running = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("run it") });
    await updateMatching(state, (u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress");
    say("running", { modes });
    await waitForTest();
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const reply = await running;
    say("cancelled", { stopReason: reply.stopReason });
    await waitForTest();
    const after = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("still there?") });
    say("after", { stopReason: after.stopReason, message: chunks(state, sessionId, "agent_message_chunk") });
  },

  // Bash in the editor's terminal: one command runs to its end (its output is the model's),
  // then a long one is cancelled while it runs; the test checks the machine in between.
  async terminal(ctx, state) {
    await initialize(ctx, false, true);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full" });
    const first = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("try it") });
    say("first", { stopReason: first.stopReason, created: state.created, released: [...state.released],
                   toolUpdates: state.updates.map((u) => u.update)
                     .filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") });
    const running = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("run it") });
    await updateMatching(state, (u) => u.sessionUpdate === "tool_call_update"
      && (u.content ?? []).some((c) => c.type === "terminal" && c.terminalId === "term-2"));
    say("running", { pid: state.terminals["term-2"].child.pid });
    await waitForTest();
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const reply = await running;
    await state.terminals["term-2"].exited;
    say("cancelled", { stopReason: reply.stopReason, killed: state.killed, released: state.released,
                       exit: state.terminals["term-2"].exit });
  },

  // Background shells with terminals offered: a started one is shown in a terminal embedded
  // in its call, kill_shell ends it and releases that terminal; a second one is released
  // when the session closes. The test checks the machine at each stop.
  async background(ctx, state) {
    await initialize(ctx, false, true);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full" });
    const started = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("start it") });
    const embeds = (st) => st.updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update"
      && (u.content ?? []).some((c) => c.type === "terminal" && c.terminalId === "term-1"));
    await until(state, (st) => st.terminals["term-1"]?.output.includes("bg-first-up")
      && embeds(st).length > 0);
    const embedded = embeds(state);
    const statuses = state.updates.map((u) => u.update)
      .filter((u) => u.sessionUpdate === "tool_call_update" && u.status).map((u) => u.status);
    say("started", { stopReason: started.stopReason, created: state.created, embedded,
                     finalStatus: statuses[statuses.length - 1],
                     view: state.terminals["term-1"].output });
    await waitForTest();
    const stopped = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("stop it") });
    await until(state, (st) => st.released.includes("term-1"));
    say("stopped", { stopReason: stopped.stopReason, killed: [...state.killed],
                     released: [...state.released], exit: state.terminals["term-1"].exit });
    await waitForTest();
    await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("start another") });
    await until(state, (st) => st.terminals["term-2"]?.output.includes("bg-second-up"));
    say("second", { created: state.created.length });
    await waitForTest();
    await ctx.request(acp.methods.agent.session.close, { sessionId });
    const released = [...state.released];
    await state.terminals["term-2"].exited;
    say("closed", { killed: [...state.killed], released });
  },

  // The editor goes away mid-turn: this process exits while a bash runs, without a word.
  async exit(ctx, state, agent) {
    await initialize(ctx);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "full" });
    ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("run the long thing") })
      .catch(() => {});
    await updateMatching(state, (u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress");
    say("running", { pid: agent.child.pid, sessionId });
    await waitForTest();
    process.exit(0);
  },

  // Two sessions of one agent at once.
  async two(ctx, state) {
    await initialize(ctx);
    const a = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    const b = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    const replies = await Promise.all([
      ctx.request(acp.methods.agent.session.prompt, { sessionId: a.sessionId, prompt: text("alpha") }),
      ctx.request(acp.methods.agent.session.prompt, { sessionId: b.sessionId, prompt: text("beta") }),
    ]);
    say("done", {
      ids: [a.sessionId, b.sessionId], stopReasons: replies.map((r) => r.stopReason),
      messages: [chunks(state, a.sessionId, "agent_message_chunk"),
                 chunks(state, b.sessionId, "agent_message_chunk")],
    });
  },

  // A prompt, the agent closed; a second agent process loads the session and goes on.
  async load(ctx, state, first) {
    await initialize(ctx);
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("remember the word plum") });
    say("first", { sessionId });
    return sessionId;
  },

  // An unknown session and a bad mode are errors, not a crash; the agent goes on.
  async errors(ctx, state) {
    await initialize(ctx);
    const errors = [];
    for (const [method, params] of [
      [acp.methods.agent.session.prompt, { sessionId: "nope", prompt: text("x") }],
      [acp.methods.agent.session.new, { cwd: "relative/dir", mcpServers: [] }],
    ]) {
      try { await ctx.request(method, params); errors.push(null); }
      catch (e) { errors.push({ code: e.code, message: e.message }); }
    }
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    try { await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "yolo" }); errors.push(null); }
    catch (e) { errors.push({ code: e.code, message: e.message }); }
    say("done", { errors });
  },
};

async function run() {
  const agent = startAgent();
  const state = newState();
  const result = await makeClient(state).connectWith(
    agent.stream, (ctx) => scenarios[scenario](ctx, state, agent));
  agent.child.stdin.end();  // the editor closes: the agent ends every session and exits
  say("agent-exited", { code: await agent.exited });
  if (scenario === "load") {
    const again = startAgent();
    const loaded = newState();
    await makeClient(loaded).connectWith(again.stream, async (ctx) => {
      await initialize(ctx);
      const response = await ctx.request(acp.methods.agent.session.load,
        { sessionId: result, cwd: workspace, mcpServers: [] });
      const replayed = loaded.updates.map((u) => u.update)
        .filter((u) => u.sessionUpdate.endsWith("message_chunk"))
        .map((u) => [u.sessionUpdate, u.content.text]);
      const reply = await ctx.request(acp.methods.agent.session.prompt,
        { sessionId: result, prompt: text("which word?") });
      say("loaded", { response, replayed, stopReason: reply.stopReason });
    });
    again.child.stdin.end();
    say("agent-exited", { code: await again.exited });
  }
  process.exit(0);
}

run().catch((error) => {
  say("failed", { error: String(error?.stack ?? error), data: error?.data ?? null });
  process.exit(1);
});
