// The nyz web console: plain JS, no framework, no build step. Protocol: docs/web.md.
"use strict";
(function () {
  const PROTOCOL = 1;
  const MAIN = "/agents/main";
  const token = window.NYZ_TOKEN;
  let sessionId = window.NYZ_SESSION || "";
  let lastSeq = 0, ws = null, retry = 0, commands = [], busy = false;
  const agents = new Map();        // path -> node info
  const processes = new Map();     // background shell id -> {id, agent, command, state}
  const live = new Map();          // agent -> {text: el, raw, thinking: el}
  const tools = new Map();         // call_id -> {card, pre}
  const asks = [];                 // pending approval_request / user_question events
  let selected = null;

  const h = (tag, attrs, ...kids) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") el.className = v; else if (k.startsWith("on")) el[k] = v; else el.setAttribute(k, v);
    }
    for (const kid of kids) el.append(kid);
    return el;
  };

  // ---- layout ------------------------------------------------------------------------
  const app = document.getElementById("app");
  app.textContent = "";
  const tree = h("div", { id: "tree" });
  const aside = h("aside", {}, h("h2", {}, "Agents"), tree);
  const main = h("main", { id: "stream" });
  const input = h("textarea", { id: "prompt", placeholder: "Message the agent, or / for commands", rows: "1" });
  const complete = h("div", { id: "complete", hidden: "" });
  const sendBtn = h("button", { class: "primary", type: "submit", id: "send" }, "Send");
  const cancelBtn = h("button", { type: "button", id: "cancel", onclick: () => cancel(selected || MAIN, "subtree") }, "Cancel");
  const form = h("form", { id: "input" }, complete, input, sendBtn, cancelBtn);
  const conn = h("span", { class: "conn down", id: "conn" }, "connecting");
  const statusEl = h("span", { class: "grow", id: "status" }, "");
  const target = h("span", { id: "target" }, "→ main");
  const usageEl = h("span", { id: "usage" }, "");
  const themeBtn = h("button", { type: "button", id: "theme", onclick: toggleTheme }, "theme");
  const footer = h("footer", {}, conn, statusEl, target, usageEl, themeBtn);
  app.append(aside, main, form, footer);
  const dialog = h("dialog", { id: "ask" });
  document.body.append(dialog);

  const stored = localStorage.getItem("nyz-theme");
  setTheme(stored || (matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark"));
  function setTheme(name) { document.documentElement.dataset.theme = name; localStorage.setItem("nyz-theme", name); }
  function toggleTheme() { setTheme(document.documentElement.dataset.theme === "light" ? "dark" : "light"); }

  // ---- markdown (a small, safe subset: everything is escaped first) --------------------
  const esc = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  function inline(s) {
    return esc(s).replace(/`([^`]+)`/g, "<code>$1</code>").replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
  }
  function markdown(src) {
    const out = []; const lines = src.split("\n"); let i = 0; let list = null;
    const endList = () => { if (list) { out.push(list === "ul" ? "</ul>" : "</ol>"); list = null; } };
    while (i < lines.length) {
      const line = lines[i];
      if (line.startsWith("```")) {
        endList(); const body = []; i++;
        while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
        i++; out.push("<pre><code>" + esc(body.join("\n")) + "</code></pre>"); continue;
      }
      let m;
      if ((m = line.match(/^(#{1,4})\s+(.*)$/))) { endList(); out.push(`<h${m[1].length + 2}>${inline(m[2])}</h${m[1].length + 2}>`); }
      else if ((m = line.match(/^\s*[-*]\s+(.*)$/))) { if (list !== "ul") { endList(); out.push("<ul>"); list = "ul"; } out.push("<li>" + inline(m[1]) + "</li>"); }
      else if ((m = line.match(/^\s*\d+[.)]\s+(.*)$/))) { if (list !== "ol") { endList(); out.push("<ol>"); list = "ol"; } out.push("<li>" + inline(m[1]) + "</li>"); }
      else if (!line.trim()) { endList(); }
      else { endList(); out.push("<p>" + inline(line) + "</p>"); }
      i++;
    }
    endList();
    return out.join("");
  }
  function diffText(pre, text) {
    pre.textContent = "";
    for (const line of text.split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
      const span = h("span", cls ? { class: cls } : {}, line + "\n");
      pre.append(span);
    }
  }

  // ---- the stream ----------------------------------------------------------------------
  const short = (path) => path === MAIN ? "main" : path.split("/").pop();
  function block(agent, cls, ...kids) {
    const el = h("div", { class: "msg " + cls, "data-agent": agent }, h("div", { class: "who" }, short(agent)), ...kids);
    el.hidden = !visible(agent);
    const stick = main.scrollTop + main.clientHeight >= main.scrollHeight - 40;
    main.append(el);
    if (stick) main.scrollTop = main.scrollHeight;
    return el;
  }
  const visible = (agent) => !selected || agent === selected || agent.startsWith(selected + "/");
  function note(text, cls, agent) { block(agent || MAIN, "note " + (cls || ""), text); }
  function liveOf(agent) { if (!live.has(agent)) live.set(agent, {}); return live.get(agent); }
  let pendingRender = new Set();
  function renderSoon(state) {
    pendingRender.add(state);
    // a timer, not an animation frame: a page in a background tab renders too
    if (pendingRender.size === 1) setTimeout(() => {
      for (const s of pendingRender) s.body.innerHTML = markdown(s.raw);
      pendingRender = new Set();
    }, 30);
  }

  function apply(e) {
    const a = e.agent || MAIN;
    if (a.startsWith("/agents/") || a.startsWith("/team/")) ensureAgent(a);
    const st = liveOf(a);
    switch (e.type) {
      case "session_start": break;
      case "turn_start":
        if (e.prompt) block(a, "user", h("div", {}, e.prompt));
        st.text = null; st.thinking = null;
        if (a === MAIN) setBusy(true);
        setAgent(a, { status: "running" });
        break;
      case "text_delta":
        if (!st.text) { const body = h("div", { class: "assistant" }); block(a, "assistant-msg", body); st.text = { body, raw: "" }; }
        st.text.raw += e.text; renderSoon(st.text); st.thinking = null; break;
      case "thinking_delta":
        if (!st.thinking) { st.thinking = h("div", { class: "thinking" }); block(a, "thinking-msg", st.thinking); }
        st.thinking.textContent += e.text; break;
      case "tool_start": {
        st.text = null; st.thinking = null;
        const pre = h("pre", {}); const state = h("span", { class: "state" }, "running…");
        let args = e.arguments || ""; try { args = JSON.stringify(JSON.parse(args)); } catch (_) { /* raw */ }
        const summary = h("summary", {}, state, e.name + " ", h("span", { class: "args" }, args.slice(0, 120)));
        const card = h("details", { class: "tool", "data-call": e.call_id }, summary, pre);
        block(a, "tool-msg", card); tools.set(e.call_id, { card, pre, state }); break;
      }
      case "tool_output_delta": { const t = tools.get(e.call_id); if (t) t.pre.textContent += e.text; break; }
      case "tool_done": {
        const t = tools.get(e.call_id); if (!t) break;
        t.state.textContent = (e.is_error ? "failed" : "done") + (e.duration_ms ? ` · ${Math.round(e.duration_ms)} ms` : "");
        if (e.is_error) t.card.classList.add("error");
        // the file tools' results end with the unified diff of what changed: coloured
        const out = e.output || "";
        if (/^(@@ |--- |\+\+\+ )/m.test(out)) diffText(t.pre, out); else t.pre.textContent = out;
        break;
      }
      case "approval_request": case "user_question": asks.push(e); showAsk(); break;
      case "agent_status":
        setAgent(a, { status: e.status, detail: e.detail, step: e.step, tokens: e.tokens, cost_usd: e.cost_usd }); break;
      case "usage":
        if (a === MAIN) usageEl.textContent = `${e.total_input_tokens + e.total_output_tokens} tok · $${(e.total_cost_usd || 0).toFixed(3)}`;
        break;
      case "turn_complete":
        st.text = null; st.thinking = null;
        if (e.stop_reason === "cancelled") note("[cancelled]", "", a);
        if (a === MAIN) setBusy(false);
        setAgent(a, { status: agents.get(a).status === "running" ? "idle" : agents.get(a).status });
        dropAsks((x) => x.agent === a);
        break;
      case "error": note("error: " + e.message, "error", a); break;
      case "compaction": note(`[context compacted: ${e.before_tokens} → ${e.after_tokens} tokens]`, "", a); break;
      case "team_message": if (e.kind === "message") note(`[${e.sender} → ${e.to}] ${e.text}`, "", a); break;
      case "task_update": note(`[task ${e.task_id} ${e.status}] ${e.subject}`, "", a); break;
      case "autopilot_phase": note(`[autopilot ${e.phase}${e.loop ? ` (loop ${e.loop})` : ""}${e.detail ? ": " + e.detail : ""}]`, "", a); break;
      case "retry": note(`[retry ${e.attempt}/${e.max}: ${e.reason}]`, "", a); break;
      case "process_start":
        processes.set(e.shell_id, { id: e.shell_id, agent: a, command: e.command, state: "running" });
        note(`[${e.shell_id} started: ${e.command}]`, "", a); drawTree(); break;
      case "process_exit": {
        const p = processes.get(e.shell_id);
        if (p) p.state = e.state === "killed" ? "killed" : `exit ${e.exit_code}`;
        note(`[${e.shell_id} ${e.state === "killed" ? "killed" : "exited with code " + e.exit_code}: ${e.command}]`, "", a);
        drawTree(); break;
      }
      default: break;
    }
  }

  // ---- the agent tree --------------------------------------------------------------------
  function ensureAgent(path) { if (!agents.has(path)) { agents.set(path, { path, status: "idle", step: 0, tokens: 0, cost_usd: 0 }); drawTree(); } }
  function setAgent(path, info) { ensureAgent(path); Object.assign(agents.get(path), info); drawTree(); }
  function drawTree() {
    tree.textContent = "";
    const paths = [...agents.keys()].sort();
    for (const path of paths) {
      const n = agents.get(path);
      const depth = path.startsWith("/team/") ? path.split("/").length - 4 : path.split("/").length - 3;
      const cancelOne = h("button", { type: "button", class: "cancel-agent", title: "cancel this agent and its subtree",
        onclick: (ev) => { ev.stopPropagation(); cancel(path, "subtree"); } }, "✕");
      const meta = h("span", { class: "meta" }, `${n.step || 0} st · ${n.tokens || 0} tok · $${(n.cost_usd || 0).toFixed(3)}`);
      const row = h("div", { class: "node" + (selected === path ? " selected" : ""), "data-path": path, "data-status": n.status,
        title: n.detail || n.status, style: `padding-left:${8 + depth * 14}px`,
        onclick: () => select(selected === path ? null : path) },
      h("span", { class: "dot " + n.status }),
      h("span", { class: "name" }, short(path), h("span", { class: "status" }, n.status)), cancelOne, meta);
      tree.append(row);
      for (const p of processes.values()) {
        if (p.agent !== path) continue;
        const kill = h("button", { type: "button", class: "cancel-agent", title: "kill this process and its group",
          onclick: (ev) => { ev.stopPropagation(); send({ type: "kill_shell", id: p.id }); } }, "✕");
        tree.append(h("div", { class: "node process", "data-shell": p.id, "data-status": p.state,
          style: `padding-left:${22 + depth * 14}px` },
        h("span", { class: "name" }, "⚙ " + p.id, h("span", { class: "status" }, p.state)),
        p.state === "running" ? kill : "", h("span", { class: "meta" }, p.command.slice(0, 60))));
      }
    }
  }
  function select(path) {
    selected = path;
    target.textContent = "→ " + short(path || MAIN);
    for (const el of main.children) el.hidden = !visible(el.dataset.agent || MAIN);
    drawTree();
  }

  // ---- approvals and questions -------------------------------------------------------------
  function dropAsks(pred) {
    for (let i = asks.length - 1; i >= 0; i--) if (pred(asks[i])) asks.splice(i, 1);
    showAsk();
  }
  function showAsk() {
    const e = asks[0];
    if (!e) { if (dialog.open) dialog.close(); dialog.dataset.request = ""; return; }
    if (dialog.open && dialog.dataset.request === e.request_id) return;
    dialog.textContent = ""; dialog.dataset.request = e.request_id; dialog.dataset.kind = e.type;
    const who = e.agent === MAIN ? "" : e.agent + " asks: ";
    if (e.type === "approval_request") {
      dialog.append(h("h3", {}, `${who}Approve ${e.tool}?`), h("div", {}, e.summary || ""));
      if (e.preview) { const pre = h("pre", {}); diffText(pre, e.preview); dialog.append(pre); }
      const answer = (value) => () => send({ type: "approve", request_id: e.request_id, answer: value });
      dialog.append(h("div", { class: "buttons" },
        h("button", { type: "button", id: "deny", onclick: answer("deny") }, "Deny"),
        h("button", { type: "button", id: "always", onclick: answer("always") }, "Always this session"),
        h("button", { type: "button", class: "primary", id: "approve", onclick: answer("approve") }, "Approve")));
    } else {
      dialog.append(h("h3", {}, who + e.question));
      const buttons = h("div", { class: "buttons" });
      for (const opt of e.options || []) {
        buttons.append(h("button", { type: "button", class: "option", onclick: () => answerQ(e, opt.value) }, opt.label || opt.value));
      }
      if (e.allow_custom) {
        const text = h("input", { type: "text", id: "custom", placeholder: "your answer" });
        buttons.append(text, h("button", { type: "button", class: "primary", onclick: () => answerQ(e, text.value) }, "Answer"));
      }
      dialog.append(buttons);
    }
    if (!dialog.open) dialog.showModal();
  }
  function answerQ(e, text) { send({ type: "answer", request_id: e.request_id, text: String(text) }); }

  // ---- input and slash-command completion ----------------------------------------------
  let choice = 0;
  function matches() { const v = input.value; return v.startsWith("/") && !v.includes(" ") ? commands.filter((c) => c.name.startsWith(v)) : []; }
  function drawComplete() {
    const found = matches(); complete.textContent = "";
    complete.hidden = !found.length;
    choice = Math.min(choice, Math.max(found.length - 1, 0));
    found.forEach((c, i) => complete.append(h("div", { class: i === choice ? "active" : "", onclick: () => { input.value = c.name + " "; drawComplete(); input.focus(); } },
      c.name, h("span", {}, c.summary))));
  }
  input.addEventListener("input", () => { choice = 0; drawComplete(); });
  input.addEventListener("keydown", (ev) => {
    const found = matches();
    if (found.length && (ev.key === "Tab" || (ev.key === "Enter" && input.value !== found[choice].name))) {
      ev.preventDefault(); input.value = found[choice].name + " "; drawComplete(); return;
    }
    if (found.length && (ev.key === "ArrowDown" || ev.key === "ArrowUp")) { ev.preventDefault(); choice = (choice + (ev.key === "ArrowDown" ? 1 : found.length - 1)) % found.length; drawComplete(); return; }
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = input.value.trim(); if (!text) return;
    if (text.startsWith("/")) { note(text, "command"); send({ type: "command", line: text }); }
    else send({ type: "message", text, agent: selected || MAIN });
    input.value = ""; drawComplete();
  });
  function cancel(agent, scope) { send({ type: "cancel", agent, scope }); }
  function setBusy(value) { busy = value; document.body.dataset.busy = value ? "1" : ""; }

  // ---- the connection -----------------------------------------------------------------------
  function send(msg) { if (ws && ws.readyState === 1) ws.send(JSON.stringify(msg)); else note("not connected; try again in a moment", "error"); }
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    ws = new WebSocket(`${scheme}://${location.host}/ws?token=${encodeURIComponent(token)}`);
    ws.onopen = () => { retry = 0; ws.send(JSON.stringify({ type: "hello", protocol: PROTOCOL, session: sessionId || null, since: lastSeq })); };
    ws.onmessage = (m) => receive(JSON.parse(m.data));
    ws.onclose = () => {
      conn.textContent = "reconnecting…"; conn.className = "conn down"; document.body.dataset.state = "reconnecting";
      setTimeout(connect, Math.min(500 * 2 ** retry++, 8000));
    };
  }
  function receive(msg) {
    switch (msg.type) {
      case "welcome":
        sessionId = msg.session_id; commands = msg.commands;
        history.replaceState(null, "", `#token=${encodeURIComponent(token)}&session=${encodeURIComponent(sessionId)}`);
        conn.textContent = "● live · " + sessionId.slice(0, 8); conn.className = "conn up"; break;
      case "state":
        statusEl.textContent = msg.status; setBusy(msg.busy);
        for (const n of msg.agents) setAgent(n.path, n);
        if (msg.first_seq > lastSeq + 1 && lastSeq) note(`[events ${lastSeq + 1}–${msg.first_seq - 1} are no longer kept]`);
        asks.length = 0; for (const p of msg.pending) asks.push(p); showAsk();
        document.body.dataset.state = "connected"; break;
      case "event":
        if (msg.seq <= lastSeq) break;
        lastSeq = msg.seq; document.body.dataset.seq = String(lastSeq); apply(msg.event); break;
      case "output": note(msg.text, "output " + msg.kind); break;
      case "resolved": dropAsks((x) => x.request_id === msg.request_id); break;
      case "error": note(msg.message, "error"); break;
      default: break;
    }
  }
  drawTree();
  connect();
  input.focus();
})();
