// structgen playground: pick a schema, grammar or tool set, run it, and replay the canvas step by step.
// The run is one POST to playground/api/run whose answer is a Server-Sent Event stream: `structgen.draft`
// frames ({step, kind, nfe, cells: [{t, s}], text}) and one final `structgen.result`. Every draft is
// kept, so the replay slider can show any step; the page follows the live step at the chosen speed.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const API = "playground/api/";

  const state = {
    presets: [],
    history: [],      // every draft payload received, in order
    shown: -1,        // index of the draft on screen
    follow: true,     // advance to the newest draft automatically
    result: null,     // the structgen.result payload, once it came
    running: false,
    abort: null,
    timer: null,
  };
  // exposed for tests and the curious: read-only views of what the page holds
  window.playground = {
    get history() { return state.history; },
    get result() { return state.result; },
    get shown() { return state.shown; },
    get running() { return state.running; },
  };

  // -- presets -----------------------------------------------------------------------------------------
  const kind = () => document.querySelector("input[name=kind]:checked").value;
  const CUSTOM = "__custom__";
  const CUSTOM_HINT = {
    schema: "a JSON Schema",
    grammar: "a Lark grammar (start rule: start)",
    tools: 'OpenAI tools: [{"type": "function", "function": {...}}]',
  };

  async function loadPresets() {
    try {
      const res = await fetch(API + "presets");
      if (!res.ok) throw new Error(`presets: HTTP ${res.status}`);
      const data = await res.json();
      state.presets = data.presets;
      if (data.model) showModel(data.model);
      else $("model").textContent = "model: loads on the first run";
      $("key-box").hidden = !data.auth;
    } catch (e) {
      showRequestError(String(e));
    }
    fillPresets();
  }

  function showModel(model) {
    $("model").textContent = `model: ${model.name}`;
    $("model").classList.toggle("untrained", !!model.untrained);
  }

  function fillPresets() {
    const sel = $("preset");
    sel.replaceChildren();
    for (const p of state.presets.filter((p) => p.kind === kind())) {
      sel.append(new Option(p.label, p.id));
    }
    sel.append(new Option("Custom: paste your own", CUSTOM));
    // a tool-set turn runs on the agent runtime, with the server's block length and threshold
    for (const id of ["block-length", "threshold"]) {
      $(id).disabled = kind() === "tools";
      $(id).title = kind() === "tools" ? "a tool-set turn uses the server's sampler settings" : "";
    }
    applyPreset();
  }

  // grounding applies to schemas, tool sets and the grammar presets that ground themselves (SQL, alert rules)
  function updateGround() {
    const p = currentPreset();
    const off = kind() === "grammar" && !(p && p.groundable);
    $("ground").disabled = off;
    $("ground").title = off ? "grounding applies to schemas, tool sets and the SQL and alert-rule presets" : "";
  }

  function currentPreset() {
    return state.presets.find((p) => p.id === $("preset").value) || null;
  }

  function applyPreset() {
    const p = currentPreset();
    const src = $("source");
    if (p) {
      src.value = p.source;
      src.readOnly = !p.editable;
      $("source-hint").textContent = p.editable ? "(edit it to make your own)" : "(read only)";
      $("prompt").value = p.prompt;
      $("max-tokens").value = p.max_tokens;
    } else {
      src.readOnly = false;
      $("source-hint").textContent = CUSTOM_HINT[kind()];
    }
    updateGround();
  }

  function onSourceEdited() {
    // an edited preset is a custom input of the same kind, with the edited text
    if ($("preset").value !== CUSTOM) {
      const text = $("source").value;
      $("preset").value = CUSTOM;
      $("source").value = text;
      $("source-hint").textContent = CUSTOM_HINT[kind()];
      updateGround();
    }
  }

  // -- running -----------------------------------------------------------------------------------------
  function requestBody() {
    const num = (id) => Number($(id).value);
    const body = {
      kind: kind(),
      prompt: $("prompt").value,
      max_tokens: num("max-tokens"),
      block_length: num("block-length"),
      threshold: num("threshold"),
      temperature: num("temperature"),
      seed: num("seed"),
      ground: $("ground").checked && !$("ground").disabled,
    };
    if ($("preset").value === CUSTOM) body.source = $("source").value;
    else body.preset = $("preset").value;
    return body;
  }

  async function run() {
    if (state.running) return;
    reset();
    setRunning(true);
    const ctrl = new AbortController();
    state.abort = ctrl;
    try {
      const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
      const key = $("api-key").value.trim();
      if (key) headers.Authorization = `Bearer ${key}`;
      const res = await fetch(API + "run", {
        method: "POST",
        headers,
        body: JSON.stringify(requestBody()),
        signal: ctrl.signal,
      });
      if (!res.ok) {
        showRequestError(await errorText(res));
        setPhase("failed", "rejected");
        return;
      }
      await readEvents(res.body, onEvent);
      if (!state.result) setPhase("failed", "stream ended without a result");
    } catch (e) {
      if (e.name === "AbortError") setPhase("idle", "stopped");
      else { showRequestError(String(e)); setPhase("failed", "failed"); }
    } finally {
      setRunning(false);
      state.abort = null;
      tick();
    }
  }

  async function errorText(res) {
    try {
      const data = await res.json();
      if (data.error && data.error.message) return data.error.message;  // the server's OpenAI-style body
      const d = data.detail;
      if (typeof d === "string") return d;
      if (Array.isArray(d)) return d.map((x) => `${(x.loc || []).slice(1).join(".")}: ${x.msg}`).join("\n");
      return JSON.stringify(data);
    } catch (_) {
      return `HTTP ${res.status}`;
    }
  }

  // Server-Sent Events over a fetch body: frames are separated by a blank line; each has `event:` and
  // `data:` lines (several data lines join with a newline).
  async function readEvents(body, handle) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let event = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) handle(event, JSON.parse(data.join("\n")));
      }
    }
  }

  function onEvent(event, data) {
    if (event === "structgen.draft") {
      state.history.push(data);
      const scrub = $("scrub");
      scrub.max = String(state.history.length - 1);
      scrub.disabled = false;
      $("steps-total").textContent = String(data.step);
    } else if (event === "structgen.result") {
      state.result = data;
      if (data.model) showModel(data.model);
    }
    tick();
  }

  function stop() {
    if (state.abort) state.abort.abort();
  }

  function reset() {
    state.history = [];
    state.shown = -1;
    state.follow = true;
    state.result = null;
    $("canvas").replaceChildren();
    $("draft-text").textContent = "";
    $("result").hidden = true;
    $("request-error").hidden = true;
    $("scrub").max = "0";
    $("scrub").value = "0";
    $("scrub").disabled = true;
    $("step").textContent = "0";
    $("steps-total").textContent = "0";
    $("nfe").textContent = "0";
    $("step-kind").textContent = "–";
    markDraft(true);
  }

  function setRunning(on) {
    state.running = on;
    $("run").disabled = on;
    $("stop").disabled = !on;
    if (on) setPhase("running", "denoising…");
  }

  function setPhase(cls, text) {
    const el = $("phase");
    el.className = `phase ${cls}`;
    el.textContent = text;
  }

  function showRequestError(text) {
    const el = $("request-error");
    el.textContent = text;
    el.hidden = false;
  }

  // -- playback ----------------------------------------------------------------------------------------
  // One draft per tick while following; the final result appears once the last draft is on screen.
  function tick() {
    if (state.timer !== null) return;
    const last = state.history.length - 1;
    if (state.follow && state.shown < last) {
      const delay = Number($("speed").value);
      const next = delay === 0 ? last : state.shown + 1;
      showStep(next);
      $("scrub").value = String(next);
      state.timer = setTimeout(() => { state.timer = null; tick(); }, delay);
      return;
    }
    if (state.result && (!state.follow || state.shown === last)) showResult(state.result);
  }

  function showStep(i) {
    state.shown = i;
    const d = state.history[i];
    if (!d) return;
    renderCells(i);
    $("step").textContent = String(d.step);
    $("step-kind").textContent = d.kind;
    $("step-kind").title = d.note || "";
    $("nfe").textContent = String(d.nfe);
    $("draft-text").textContent = d.text;
    const final = state.result && i === state.history.length - 1 && state.result.valid;
    markDraft(!final);
  }

  function renderCells(index) {
    const d = state.history[index];
    const canvas = $("canvas");
    if (canvas.childElementCount !== d.cells.length) {
      canvas.replaceChildren(...d.cells.map(() => document.createElement("span")));
    }
    // what this step filled: cells masked in the step before (all filled cells of the first step)
    const prev = state.history[index - 1];
    const fresh = (i) => d.cells[i].s !== "m" && (!prev || prev.cells[i].s === "m");
    d.cells.forEach((cell, i) => {
      const el = canvas.children[i];
      const eos = cell.s !== "m" && cell.t === "";
      el.className = `cell ${cell.s}${fresh(i) ? " new" : ""}${eos ? " eos" : ""}`;
      el.textContent = cell.s === "m" ? "" : eos ? "⌀" : visible(cell.t);
      el.title = `#${i} ${{ m: "masked", f: "forced", c: "committed" }[cell.s]}`;
    });
  }

  const visible = (t) => t.replace(/ /g, "\u00a0").replace(/\n/g, "↵").replace(/\t/g, "⇥");

  function markDraft(isDraft) {
    const badge = $("draft-badge");
    badge.className = `badge ${isDraft ? "draft" : "final"}`;
    badge.textContent = isDraft ? "draft — not final, never acted on" : "final canvas";
    $("draft-box").classList.toggle("final", !isDraft);
    $("draft-box").querySelector("h2").textContent = isDraft ? "Draft" : "Final text";
  }

  // -- result ------------------------------------------------------------------------------------------
  function showResult(r) {
    $("result").hidden = false;
    const ok = !!r.valid;
    const valid = $("valid");
    valid.className = `badge ${ok ? "valid" : "invalid"}`;
    valid.textContent = ok ? "valid" : r.error ? "failed" : "invalid";
    setPhase(ok ? "done" : "failed", ok ? "done" : "not valid");
    if (state.shown === state.history.length - 1) markDraft(!ok);

    let shown = r.text;
    if (r.kind === "tools" && r.call) shown = JSON.stringify(r.call, null, 2);
    else if (r.value !== null && r.value !== undefined) shown = JSON.stringify(r.value, null, 2);
    $("result-value").textContent = shown || "(nothing)";
    $("errors").replaceChildren(...(r.errors || []).map((e) => {
      const li = document.createElement("li");
      li.textContent = e;
      return li;
    }));
    const parts = [`nfe ${r.nfe}`, `${r.steps} steps`];
    if (r.output_tokens !== undefined) {
      parts.push(`${r.output_tokens} tokens` + (r.forced_tokens !== undefined ? ` (${r.forced_tokens} forced)` : ""));
    }
    if (r.repair_rounds) parts.push(`${r.repair_rounds} repair round(s)` + (r.fallback ? " (fallback)" : ""));
    if (r.engine) parts.push(`engine ${r.engine}`);
    if (r.ground) parts.push("grounded");
    if (r.timings) parts.push(`${r.timings.total_s.toFixed(2)} s`);
    $("result-stats").textContent = parts.join(" · ");
    showTool(r);
  }

  function showTool(r) {
    const box = $("tool-box");
    box.hidden = r.kind !== "tools";
    if (box.hidden) return;
    const st = r.state || (r.valid ? "validated" : "invalid");
    $("call-state").className = `state ${st}`;
    $("call-state").textContent = st;
    const d = r.decision;
    const dec = $("decision");
    dec.className = `decision ${d ? d.action : ""}`;
    dec.textContent = d ? d.action : "none";
    $("decision-why").textContent = d
      ? [d.rule ? `rule: ${d.rule}` : "", d.reason || ""].filter(Boolean).join(" — ")
      : r.valid ? "(no policy decision was made)" : "(an invalid call is never decided)";
    const first = (r.calls || [])[0];
    const appr = $("approval");
    appr.hidden = !(first && first.approval_id);
    if (!appr.hidden) {
      appr.textContent = `parked for approval: ${first.approval_id} (POST /v1/approvals/${first.approval_id}/approve ` +
        "on the server); approving releases it, the playground still does not run it";
    }
  }

  // -- wiring ------------------------------------------------------------------------------------------
  for (const radio of document.querySelectorAll("input[name=kind]")) radio.addEventListener("change", fillPresets);
  $("preset").addEventListener("change", applyPreset);
  $("source").addEventListener("input", onSourceEdited);
  $("run").addEventListener("click", run);
  $("stop").addEventListener("click", stop);
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run();
  });
  $("scrub").addEventListener("input", () => {
    state.follow = false;
    $("live").disabled = false;
    showStep(Number($("scrub").value));
  });
  $("live").addEventListener("click", () => {
    state.follow = true;
    $("live").disabled = true;
    tick();
  });
  loadPresets();
})();
