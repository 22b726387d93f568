"""The fixed text of the generated script: the body recorder, the check helpers it calls
on what `run()` observed (as harness/judge/compare.py judges), the supervisor that runs
the check in a child process (a crash or a hang is a `BUG:` too) and `main`.

Each is a source snippet (SUPERVISOR and MAIN are `str.format` templates).
"""

RECORD = '''
TYPES = {}  # name -> (shape, dtype, vma): what jax.typeof showed while jax traced the body


def record(**values):
  for name, v in values.items():
    if name not in TYPES:  # the first trace (later ones: jvp, vjp, batching)
      t = jax.typeof(v)
      vma = getattr(t, "vma", None)  # the varying manual axes (jax 0.10: jax.typeof(v).mat.varying)
      vma = getattr(getattr(t, "mat", None), "varying", None) if vma is None else vma
      TYPES[name] = (tuple(t.shape), str(t.dtype), None if vma is None else sorted(str(a) for a in vma))
'''

CHECK_COMMON = '''
def short(a):
  return np.array2string(np.asarray(a), threshold=12, edgeitems=2).replace("\\n", "")


def check_error(e, problems):
  want, name, msg = EXPECTED_ERROR, type(e).__name__, str(e)
  said = f"jax raised {name}: {msg[:300]!r}"
  if name not in want["types"]:
    problems.append(f"{said}, but a {want['kind']} error is a {'/'.join(want['types'])}")
  elif not any(ph in msg for ph in want["phrases"]):
    problems.append(f"{said}, whose message names none of {list(want['phrases'])} ({want['kind']})")
  elif [x for x in want["facts"] if x not in msg]:
    problems.append(f"{said}, whose message does not name {[x for x in want['facts'] if x not in msg]} ({want['kind']})")


def check_types(problems):
  for name, shape, dtype, vma in EXPECTED_TYPES:
    if name not in TYPES:
      continue
    got = TYPES[name]
    if got[0] != shape:
      problems.append(f"inside the body jax.typeof({name}).shape={got[0]}, but it must be {shape}")
      return  # later shapes follow from this one
    if got[1] != dtype:
      problems.append(f"inside the body jax.typeof({name}).dtype={got[1]}, but it must be {dtype}")
      return
    if vma is not None and got[2] is not None and got[2] != vma:
      problems.append(f"inside the body jax.typeof({name}).vma={set(got[2]) or '{}'}, but {name} varies over {set(vma) or '{}'}")
      return


def check_shapes(outs, problems):
  """Every output's global shape and dtype; False when they differ (values are moot)."""
  if len(outs) != len(EXPECTED_OUTPUTS):
    problems.append(f"{len(outs)} outputs, but the program has {len(EXPECTED_OUTPUTS)}")
    return False
  ok = True
  for k, ((shape, dtype, _, _), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    if shape != e["shape"] or dtype != e["dtype"]:
      problems.append(f"out[{k}] is {dtype}{list(shape)}, but it must be {e['dtype']}{list(e['shape'])}")
      ok = False
  return ok


def same(got, want, e, unchecked=None):
  """`got` against `want` but at the elements `unchecked` (one device's block of
  e["unchecked"]: no value is predicted there); where the output has such elements and
  this is not one device's block, no value is compared."""
  if e["atol"] == float("inf"):
    return True  # the values may overflow the dtype: only the shape and dtype are predicted
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  if got.shape != want.shape:
    return False
  if e.get("unchecked") is not None:
    if unchecked is None:
      return True
    got, want = got[~unchecked], want[~unchecked]
  return bool(np.array_equal(got, want) if e["exact"] else np.allclose(got, want, rtol=e["rtol"], atol=e["atol"]))


def tolerance(e):
  return "exactly" if e["exact"] else f"within rtol={e['rtol']:g}, atol={e['atol']:g}"


def check_shardings(problems):
  """jax.typeof(out).sharding.spec of each output (where jax says and the oracle predicts one)."""
  for k, (got, e) in enumerate(zip(globals().get("SHARDINGS", []), EXPECTED_OUTPUTS)):
    want = e.get("sharding")
    if got is not None and want is not None and [list(got[0]), list(got[1]), list(got[2])] != [want[0], want[1], want[2]]:
      problems.append(f"out[{k}]: jax.typeof(out).sharding.spec={got}, but it must be {tuple(want)} (the out_spec's Explicit axes)")
'''

CHECK_VALUES = '''
def tiles(w, shape):
  counts = [n // max(m, 1) for n, m in zip(w.shape, shape)]
  return [w[tuple(slice(i * m, (i + 1) * m) for i, m in zip(idx, shape))] for idx in np.ndindex(*counts)]


def check_values(outs, problems):
  """Each device's block of each output (as the harness compares them)."""
  for k, ((_, _, blocks, value), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    want = e["blocks"]
    coords = list(np.ndindex(*MESH_SHAPE))
    if globals().get("LOCAL_ONLY"):  # one process of several: the blocks it holds
      coords = [c for c in coords if c in blocks]
    if globals().get("MIXED") and e["value"] is not None and value is not None:
      # a mixed mesh: the global value, and each block an aligned tile of its part of it
      # along the dimensions split over Explicit axes only (the compiler lays out the rest)
      if not same(value, e["value"], e):
        problems.append(f"out[{k}] is {short(value)}, but it must be {short(e['value'])} ({tolerance(e)})")
        continue
      for c in coords:
        w = e["value"][tuple(slice(a, b) for a, b in e["windows"][c])]
        got = blocks.get(c)
        if got is None or got.ndim != w.ndim or any(m > n or (m and n % m) for m, n in zip(got.shape, w.shape)):
          problems.append(f"out[{k}]: device {c} holds a block of shape {None if got is None else got.shape}, which does not tile {w.shape}, "
                          f"its part of the global value under out_specs={e['spec']}")
          break
        if got.size and not any(same(got, t, e) for t in tiles(w, got.shape)):
          problems.append(f"out[{k}]: device {c} holds {short(got)}, no aligned tile of its part {short(w)} of the global value")
          break
      continue
    if AUTO_AXES and all(blocks.get(c) is not None and blocks[c].ndim == want[c].ndim for c in coords) and all(
        w % max(g, 1) == 0 for c in coords for g, w in zip(blocks[c].shape, want[c].shape)) and any(
        blocks[c].shape != want[c].shape for c in coords):
      # jax laid the output out along automatic axes too: the global value decides, or
      # (none: blocks differ) each block must be an aligned tile of the predicted one
      if e["value"] is not None and value is not None:
        if not same(value, e["value"], e):
          problems.append(f"out[{k}] is {short(value)}, but it must be {short(e['value'])} ({tolerance(e)})")
        continue
      bad = [c for c in coords if not any(same(blocks[c], t, e) for t in tiles(want[c], blocks[c].shape))]
      if bad:
        problems.append(f"out[{k}]: at devices {bad[:4]} the block {short(blocks[bad[0]])} is no tile of {short(want[bad[0]])}")
      continue
    bad = []
    for c in coords:
      got = blocks.get(c)
      if got is None or got.shape != want[c].shape:
        problems.append(f"out[{k}]: device {c} holds a block of shape {None if got is None else got.shape}, but "
                        f"out_specs={e['spec']} gives it {want[c].shape}")
        break
      if not same(got, want[c], e, None if e.get("unchecked") is None else e["unchecked"][c]):
        bad.append(c)
    else:
      if bad:
        c = bad[0]
        problems.append(f"out[{k}]: wrong values on {len(bad)} of {len(coords)} devices {bad[:4]}{'...' if len(bad) > 4 else ''}; "
                        f"device {c} holds {short(blocks[c])}, but it must hold {short(want[c])} ({tolerance(e)})")
'''

CHECK_BATCHED = '''
def check_values(outs, problems):
  """The batch of each output against the oracle run once per member, stacked."""
  for k, ((_, _, _, value), e) in enumerate(zip(outs, EXPECTED_OUTPUTS)):
    if e["value"] is None:
      continue  # not replicated where its out_spec says (check_vma=False): no global value
    if not same(value, e["value"], e):
      bad = [b for b in range(len(value)) if not same(value[b], e["value"][b], e)]
      b = bad[0] if bad else 0
      problems.append(f"out[{k}]: batch members {bad} are wrong; member {b} is {short(value[b])}, "
                      f"but it must be {short(e['value'][b])} (the unbatched program on member {b}'s arguments; {tolerance(e)})")
'''

LOWERING_FACTS = r'''
REGION = re.compile(
  r"sdy\.manual_computation\((?P<args>[^)]*)\) in_shardings=\[(?P<ins>.*?)\] "
  r"out_shardings=\[(?P<outs>.*?)\] manual_axes=\{(?P<manual>[^}]*)\} \((?P<block>[^)]*)\)")


def dims(sharding):
  """'{"x"}, {}, {"y", ?}' -> [['x'], [], ['y']]"""
  return [[t.strip().strip('"') for t in d.split(",") if t.strip() and t.strip() != "?"] for d in re.findall(r"\{([^}]*)\}", sharding)]


def lowering_facts(text):
  """The manual regions of the lowered module: their manual axes; the first one's in / out
  shardings (mesh axes per dimension) and per-device block shapes."""
  regions = list(REGION.finditer(text))
  facts = {"region_manual_axes": [sorted(a.strip().strip('"') for a in m["manual"].split(",") if a.strip()) for m in regions]}
  if regions:
    m = regions[0]
    facts["manual_axes"] = facts["region_manual_axes"][0]
    facts["in_shardings"] = [dims(s) for s in re.findall(r"<@\w+, \[(.*?)\]", m["ins"])]
    facts["out_shardings"] = [dims(s) for s in re.findall(r"<@\w+, \[(.*?)\]", m["outs"])]
    facts["block_shapes"] = [[int(n) for n in t.split("x") if n] for t in re.findall(r"tensor<((?:\d+x)*)[a-z]+\d*>", m["block"])]
  return facts
'''

CHECK_LOWERING = r'''
def check_lowering(facts, problems):
  want = EXPECTED_LOWERING
  regions = list(facts["region_manual_axes"])
  for inner in want["nested"]:
    if inner not in regions:
      problems.append(f"the lowering has manual regions over {facts['region_manual_axes']}, but a nested shard_map needs one over {inner}")
      return
    regions.remove(inner)
  manual = want["manual_axes"]
  ours = [r for r in regions if r == manual] if want["regions"] else regions
  others = [r for r in regions if r != manual and not set(r).isdisjoint(manual)]
  if len(ours) != want["regions"] or (want["regions"] and others):
    problems.append(f"the lowering has sdy.manual_computation regions over {facts['region_manual_axes']}, "
                    f"but it must have {[manual] * want['regions']}")
    return
  for key in ("manual_axes", "in_shardings", "out_shardings", "block_shapes") if want["regions"] else ():
    got = facts.get(key)
    if want.get("closed") and key in ("in_shardings", "block_shapes") and isinstance(got, list) \
        and len(want[key]) <= len(got) <= len(want[key]) + want["closed"]:
      got = got[len(got) - len(want[key]):]  # (the closed-over values jax made arguments come first)
    if got != want[key]:
      problems.append(f"the manual region's {key}={facts.get(key)}, but it must be {want[key]}")
'''

CHECK_GRAD = '''
def check_derivative(facts, problems):
  want = EXPECTED_DERIVATIVE
  if want is None or facts.get("outputs") != want["outputs"]:
    return
  for rule in ("jvp", "vjp", "linearize", "jacfwd"):
    if rule in facts and not abs(facts[rule] - want["value"]) <= want["tolerance"]:
      problems.append(f"<u, J v> by jax.{rule} is {facts[rule]:.6g}, but it must be {want['value']:.6g} "
                      f"(finite differences of the forward semantics; tolerance {want['tolerance']:.2g})")
  if "hvp" in facts and want.get("second") is not None and not abs(facts["hvp"] - want["second"]) <= want["second_tolerance"]:
    problems.append(f"v^T H v by jax.hessian is {facts['hvp']:.6g}, but it must be {want['second']:.6g} "
                    f"(second differences of the forward semantics; tolerance {want['second_tolerance']:.2g})")
'''

SUPERVISOR = '''
import os
import subprocess
import sys

CHILD = "SHARDFUZZ_REPRO_CHILD"
OWN_CRASH = {own_crash}  # this script's own signature counts a crash (None: any divergence counts)
OWN_HANG = {own_hang}  # ... a hang
OWN_ABORT = {own_abort!r}  # the check the crash must stop at ('' any): where it aborts is its identity
if os.environ.get(CHILD) != "1" and os.path.isfile(sys.argv[0]):
  import fnmatch
  from importlib.metadata import version
  # run the check in a child process: an abort inside XLA or a hang is a result too
  limit = float(os.environ.get("SHARDFUZZ_REPRO_TIMEOUT", "{timeout}"))
  try:
    r = subprocess.run([sys.executable] + sys.argv, env={{**os.environ, CHILD: "1", "PYTHONUNBUFFERED": "1"}}, timeout=limit,
                       capture_output=True, text=True)
  except subprocess.TimeoutExpired as t:
    said = t.stdout.decode() if isinstance(t.stdout, bytes) else (t.stdout or "")
    verdict = next((ln for ln in said.splitlines() if ln.startswith(("BUG:", "FIXED:"))), None)
    if verdict is not None:  # the check ended; only the process's exit did not come in time
      print(said, end="", flush=True)
      sys.exit(1 if verdict.startswith("BUG:") else 0)
    if OWN_HANG is False:
      print(f"FIXED: {title} (jax {{version('jax')}}, mode {mode}): its own bug does not show; jax hung after {{limit:g}} s (not this entry's).", flush=True)
      sys.exit(0)
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): jax hung: no result after {{limit:g}} s, but it must give {summary}.", flush=True)
    sys.exit(1)
  sys.stdout.write(r.stdout)
  sys.stderr.write(r.stderr)
  if r.returncode not in (0, 1, 2):
    how = f"signal {{-r.returncode}}" if r.returncode < 0 else f"exit status {{r.returncode}}"
    if OWN_CRASH is False or (OWN_ABORT and not fnmatch.fnmatchcase(r.stderr, f"*{{OWN_ABORT}}*")):
      print(f"FIXED: {title} (jax {{version('jax')}}, mode {mode}): its own bug does not show; jax crashed the process ({{how}}) "
            f"elsewhere than {{OWN_ABORT or 'this entry says'}} (not this entry's).", flush=True)
      sys.exit(0)
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): jax crashed the process ({{how}}), but it must give {summary}.", flush=True)
    sys.exit(1)
  sys.exit(r.returncode)
'''

MP_SUPERVISOR = '''
import os
import socket
import subprocess
import sys
import time

CHILD = "SHARDFUZZ_REPRO_CHILD"
if os.environ.get(CHILD) != "1" and os.path.isfile(sys.argv[0]):
  from importlib.metadata import version
  # the mesh spans two processes on this machine (gloo collectives): start both, each
  # checks the blocks it holds; a crash or a hang of either is a result too
  limit = float(os.environ.get("SHARDFUZZ_REPRO_TIMEOUT", "{timeout}"))
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))  # a port the kernel says is free
    address = f"127.0.0.1:{{s.getsockname()[1]}}"
  procs = [subprocess.Popen([sys.executable] + sys.argv, stdout=subprocess.PIPE, text=True,
                            env={{**os.environ, CHILD: "1", "SHARDFUZZ_REPRO_RANK": str(i), "SHARDFUZZ_REPRO_ADDRESS": address}})
           for i in (0, 1)]
  deadline, said = time.monotonic() + limit, []
  try:
    for i, pr in enumerate(procs):
      out, _ = pr.communicate(timeout=max(1.0, deadline - time.monotonic()))
      said.append(next((ln for ln in out.splitlines() if ln.startswith(("BUG:", "FIXED:"))), ""))
  except subprocess.TimeoutExpired:
    for pr in procs:
      pr.kill()
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): process {{len(said)}} hung: no result after {{limit:g}} s, "
          f"but it must give {summary}.", flush=True)
    sys.exit(1)
  codes = [pr.returncode for pr in procs]
  crashed = [i for i, c in enumerate(codes) if c not in (0, 1, 2)]
  if crashed:
    c = codes[crashed[0]]
    how = f"signal {{-c}}" if c < 0 else f"exit status {{c}}"
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): jax crashed process {{crashed[0]}} ({{how}}), but it must give {summary}.", flush=True)
    sys.exit(1)
  # the verdict first (one line), then what each process said
  detail = "\\n".join(f"process {{i}}: {{line or '(no verdict: its stderr is above)'}}" for i, line in enumerate(said))
  silent = [i for i, line in enumerate(said) if not line and codes[i] != 2]
  if silent:  # (an exception before main, e.g. in jax.distributed.initialize, also exits 1)
    print(f"BUG: {title} (jax {{version('jax')}}, mode {mode}): process {{silent[0]}} ended (exit status {{codes[silent[0]]}}) "
          f"without a result, but it must give {summary}.\\n" + detail, flush=True)
    sys.exit(1)
  if 1 in codes:
    print("BUG: " + " | ".join(f"process {{i}}: {{line.removeprefix('BUG: ')}}" for i, line in enumerate(said) if codes[i] == 1)
          + "\\n" + detail, flush=True)
    sys.exit(1)
  if 2 in codes:
    print(detail)
    sys.exit(2)
  print(f"FIXED: {title} (jax {{version('jax')}}, mode {mode}): both processes agree with shard_map's documented semantics: {summary}.\\n"
        + detail)
  sys.exit(0)
'''

# the child of MP_SUPERVISOR: 4 CPU devices here, gloo, then join the other process
MP_FORCE_DEVICES = [
    "import re  # noqa: E402",
    'os.environ["XLA_FLAGS"] = re.sub(r"--xla_force_host_platform_device_count=\\d+", "", os.environ.get("XLA_FLAGS", "")) '
    '+ " --xla_force_host_platform_device_count=4"',
    'os.environ.setdefault("JAX_PLATFORMS", "cpu")',
]
MP_INIT = [
    'jax.config.update("jax_cpu_collectives_implementation", "gloo")',
    'jax.distributed.initialize(os.environ["SHARDFUZZ_REPRO_ADDRESS"], 2, int(os.environ["SHARDFUZZ_REPRO_RANK"]))',
]

MAIN = '''
# This script's own signature (a known entry's): the (kind, where) pairs, as shardfuzz
# buckets divergences (`kind|mode|where`), that count as its bug; None: any divergence.
OWN = {own}
VALUE_KINDS = {value_kinds}  # each body value -> the op that makes it
OUTPUT_KINDS = {output_kinds}  # each output -> the ops it depends on (and 'input' for an argument)
GRAD_WHERE = {grad_where!r}  # the program's collectives, as the grad modes name a wrong derivative


def raised_at(e):
  """The op jax raised at: the last line of `body` the traceback passes through (its value
  names the op), or 'lowering' when jax raised after tracing the body. (A body that
  closes over values of the called function is defined inside `make_body`.)"""
  import inspect
  import traceback
  fn = globals().get("body") or globals().get("make_body")
  try:
    lines, start = inspect.getsourcelines(fn)
  except (OSError, TypeError):
    return "lowering"
  at = None
  for fr in traceback.extract_tb(e.__traceback__):
    if fr.name == "body" and fr.filename == fn.__code__.co_filename:
      at = fr.lineno
  if at is None or not 0 <= at - start < len(lines):
    return "lowering"
  return VALUE_KINDS.get(lines[at - start].strip().split(" = ", 1)[0], "lowering")


def classify(msg):
  """(kind, wheres) of a problem the checks after a run report."""
  m = re.match(r"inside the body jax\\.typeof\\((\\w+)\\)\\.(shape|dtype|vma)=", msg)
  if m:
    return m[2], [VALUE_KINDS.get(m[1], "input")]
  m = re.match(r"out\\[(\\d+)\\]", msg)
  ops = OUTPUT_KINDS[int(m[1])] if m and int(m[1]) < len(OUTPUT_KINDS) else sorted({{k for ks in OUTPUT_KINDS for k in ks}})
  if "jax.typeof(out).sharding" in msg:
    return "sharding", ops
  if "holds a block of shape" in msg:
    return "shape", ["device_block", *ops]
  if msg.startswith("<u, J v>"):
    return "value", [f"{{r}}:{{w}}" for r in ("jvp", "vjp") for w in [GRAD_WHERE, *sorted(VALUE_KINDS.values())]]
  if msg.startswith(("the lowering", "the manual region")):
    return "lowering", ["*"]
  if re.match(r"out\\[\\d+\\] is \\S+\\[", msg) or "outputs, but the program has" in msg:
    return ("dtype" if "dtype" in msg else "shape"), ["outputs", *ops]
  return "value", ops


def own(kind, wheres):
  return OWN is None or any(k == kind and any(fnmatch.fnmatchcase(w, pat) for w in wheres) for k, pat in OWN)


def main():
  import fnmatch
  globals()["fnmatch"] = fnmatch
  found = []  # (kind, wheres, message)
  try:
    outs, facts = run()
  except Exception as e:  # what jax raised
    name = type(e).__name__
    if EXPECTED_ERROR is None:
      at = raised_at(e)
      found.append(("unexpected_error", [f"{{at}}->{{name}}", f"read_output->{{name}}"],
                    f"jax raised {{name}}: {{str(e)[:400]!r}}, but the program is valid and must run"))
    else:
      problems = []
      check_error(e, problems)
      found += [("wrong_error", [f"{{EXPECTED_ERROR['kind']}}->{{name}}"], m) for m in problems]
  else:
    if EXPECTED_ERROR is not None:
      found.append(("missing_error", [EXPECTED_ERROR["kind"]], f"jax raised nothing, but it must raise a "
                    f"{{'/'.join(EXPECTED_ERROR['types'])}} ({{EXPECTED_ERROR['kind']}})"))
    problems = []
    check_types(problems)  # (when an error is due: the varying axes that should have caused it)
    if EXPECTED_ERROR is None:
{checks}
    found += [(*classify(m), m) for m in problems]
  where = f"{title} (jax {{jax.__version__}}, mode {mode})"
  mine = [m for k, ws, m in found if own(k, ws)]
  other = [m for k, ws, m in found if not own(k, ws)]
  if mine:
    also = f" (also, not this script's own bug: {{'; '.join(other)}})" if other else ""
    print(f"BUG: {{where}}: " + "; ".join(mine) + f". Expected by shard_map's documented semantics: {summary}.{{also}}")
    return 1
  if other:
    print(f"FIXED: {{where}}: its own bug does not show; jax diverges otherwise (not this script's bug): " + "; ".join(other) + ".")
    return 0
  print(f"FIXED: {{where}}: jax agrees with shard_map's documented semantics: {summary}.")
  return 0


if __name__ == "__main__":
  sys.exit(main())
'''

CHECK_CALLS = r'''
def check_calls(problems):
  # Each call an effect made (CALLS: the callbacks; PRINTED: the printed lines, read back)
  # must be one device's: its coordinates along the manual axes and its block of the value
  # (under vmap, one batch member's). jax's docstring promises neither how many calls nor
  # their order ("could be dropped, duplicated, or potentially reordered").
  calls = list(globals().get("CALLS", []))
  for chunk in re.split(r"^shardfuzz-effect ", "".join(PRINTED), flags=re.M)[1:]:
    head, _, body = chunk.partition(": ")
    parts = head.split()
    nums = re.findall(r"True|False|nan|-?inf|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", body)
    value = np.array([{"True": 1.0, "False": 0.0}[t] if t in ("True", "False") else float(t) for t in nums])
    calls.append((int(parts[0]), tuple(int(c) for c in parts[1:]), value))
  for n, (k, coords, value) in enumerate(calls):
    e = EXPECTED_CALLS[k]
    value = np.asarray(value)
    if any(list(c) == list(coords) and value.size == np.asarray(b).size and same(value.reshape(np.shape(b)), b, e)
           for c, b in e["calls"]):
      continue
    problems.append(f"jax.debug.{e['kind']} of {e['value']} (effect {k}), call {n}: coordinates {list(coords)} along "
                    f"{e['manual']} with value {short(value)}, but no device has both (each call is one device's "
                    "coordinates and its block)")
    return
'''

CHECK_DONATION = r'''
def check_donation(problems):
  # each donated argument after the call: deleted (reading it raises), or holding its value
  for i, deleted, intact in DONATED:
    if not intact:
      what = "is deleted, yet reading it gave values" if deleted else "is not deleted, yet no longer holds its value"
      problems.append(f"donated argument a{i} {what}; it must be deleted (reading it raises) or unchanged")
'''
