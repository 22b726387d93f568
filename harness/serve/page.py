"""The spec-checker page: one self-contained HTML document (inline style and script, no
external assets). Each edit asks the oracle (POST /api/check); the "check with jax"
button asks for jax's message and the fixes verified by the oracle and by jax."""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shardfuzz spec checker</title><link rel="icon" href="data:,">
<style>
body{font-family:sans-serif;margin:1em 2em;line-height:1.35}
label{display:block;margin-top:.5em;font-weight:bold}
input[type=text],textarea{width:100%;font-family:monospace;box-sizing:border-box}
textarea{height:9em}.cols{display:flex;gap:2em}.cols>div{flex:1;min-width:0}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;white-space:pre-wrap}
#verdict{font-size:1.2em;font-weight:bold}.valid{color:#064}.invalid{color:#900}
.add{color:#064}.del{color:#900}
</style></head><body>
<h1>shard_map spec checker</h1>
<p>Edit the mesh, the arguments, the specs and the body; the oracle answers on every edit
(per-device shapes and varying axes after each op, the verdict). <em>Check with jax</em>
runs it on real jax and shows only fixes the oracle calls valid and jax runs with the same outputs.</p>
<div class="cols"><div>
<label for="mesh">mesh (NAME=SIZE, ...)</label><input type="text" id="mesh" value="x=2">
<label for="args">arguments a0, a1, ... (DTYPE[SHAPE], ...)</label><input type="text" id="args" value="int32[4, 2]">
<label for="in_specs">in_specs</label><input type="text" id="in_specs" value="(P('x'),)">
<label for="out_specs">out_specs</label><input type="text" id="out_specs" value="(P('x'),)">
<label for="axis_names">axis_names (empty: every mesh axis)</label><input type="text" id="axis_names" value="">
<label><input type="checkbox" id="check_vma" checked> check_vma</label>
<label for="body">body (emit form)</label><textarea id="body">def body(a0):
  v0 = -a0
  return v0,</textarea>
<p><button id="run_jax">check with jax</button> <span id="status"></span></p>
</div><div>
<div id="verdict">…</div><div id="why"></div><pre id="jax"></pre>
<h3>op by op</h3><pre id="types"></pre>
<h3>fixes</h3><div id="fixes"></div>
</div></div>
<script>
"use strict";
const ids = ["mesh", "args", "in_specs", "out_specs", "axis_names", "body"];
let seq = 0, timer = null;
function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function form(jax) {
  const d = {check_vma: document.getElementById("check_vma").checked, jax: jax};
  for (const k of ids) d[k] = document.getElementById(k).value;
  return d;
}
function diff(lines) {
  return lines.map(l => l.startsWith("+") && !l.startsWith("+++") ? '<span class="add">' + esc(l) + "</span>"
    : l.startsWith("-") && !l.startsWith("---") ? '<span class="del">' + esc(l) + "</span>" : esc(l)).join("\n");
}
function show(r) {
  const v = document.getElementById("verdict");
  if (!r.ok) {
    v.className = "invalid"; v.textContent = "cannot read the form";
    document.getElementById("why").textContent = r.problem;
    document.getElementById("types").textContent = ""; document.getElementById("fixes").innerHTML = "";
    document.getElementById("jax").textContent = "";
    return;
  }
  v.className = r.verdict === "valid" ? "valid" : "invalid";
  v.textContent = r.verdict === "valid" ? "valid: jax must run it" : "jax must reject it: " + r.failing_check;
  document.getElementById("why").textContent = r.why;
  document.getElementById("jax").textContent = r.jax;
  document.getElementById("types").textContent = r.explain.join("\n");
  let h = "";
  for (const f of r.fixes) {
    h += '<div class="fix"><b>' + (f.verified ? "[verified] " : "[oracle: valid; not yet run on jax] ") + esc(f.title) + "</b>"
      + "<pre>" + diff(f.diff) + (f.outputs.length ? "\n\noutputs become:\n" + esc(f.outputs.join("\n")) : "") + "</pre></div>";
  }
  if (!r.fixes.length && r.verdict !== "valid") h = "<p>no fix: " + esc(r.why_no_fix || "press check with jax") + "</p>";
  document.getElementById("fixes").innerHTML = h;
}
async function ask(jax) {
  const mine = ++seq;
  document.getElementById("status").textContent = jax ? "running jax…" : "";
  const resp = await fetch("/api/check", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(form(jax))});
  const r = await resp.json();
  if (mine === seq) { show(r); document.getElementById("status").textContent = jax ? "checked with jax" : ""; }
}
for (const k of ids.concat(["check_vma"])) document.getElementById(k).addEventListener("input", () => {
  clearTimeout(timer); timer = setTimeout(() => ask(false), 200);
});
document.getElementById("run_jax").addEventListener("click", () => ask(true));
ask(false);
</script></body></html>
"""
