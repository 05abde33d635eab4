#!/usr/bin/env python3
"""Differential conformance campaign: sessionmedic's verdicts and heals against the real apps.

usage: campaign.py APP N [--samples DIR] [--seed S] [--out DIR] [--bin PATH] [--oracles DIR]
  APP      cc | codex | gemini | pi | qwen | copilot (the apps ../shared/oracles can run)
  N        cases to run
  --samples  healthy sessions recorded with the oracles' make_samples.py (its manifest.json)
  --out    where results.jsonl, summary.json and the disagreements' reproductions go

Each case takes one of the app's healthy recorded sessions, damages a copy in one class of its
format doc (at a random place), and asks:
  1. sessionmedic `check -json` (the app's preset over the copy): healthy, warnings, damage;
  2. the real app, resuming the damaged copy (oracle.py): what history its loader rebuilt;
  3. when damaged: sessionmedic `heal` on another copy, and the app resuming the healed one.
A disagreement is:
  silent-loss   sessionmedic says healthy without a warning, the app drops history the file holds
  heal-loses    the app after the heal sends less of the file's history than it sent before it
                (items the app makes up itself, such as "No response requested.", aside)
  heal-breaks   the app resumed the damaged file, and not the healed one, or sends more items
                twice than it did before the heal and does with the healthy file
  false-damage  sessionmedic calls damaged a file the app resumes with every item it holds, in a
                class that leaves no broken bytes (see CLEAN below)
A case the format doc decides otherwise is "explained" (EXPLAINED below), with the reason.
Each disagreement is kept under OUT/repro/<n>/ (the damaged home, both app results, the report).
The campaign needs the apps (../shared/oracles/setup.sh): it is not run in CI; what it finds
becomes regression tests on the saved files, which are.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

PRESET = {"cc": ("claude-code", ".claude"), "codex": ("codex", ".codex"), "gemini": ("gemini-cli", ".gemini"), "pi": ("pi", ".pi"),
          "qwen": ("qwen-code", ".qwen"), "copilot": ("copilot-cli", ".copilot")}

# Damage classes (the format docs' own, plus random ones). Each takes the file's bytes and a
# random source and returns the damaged bytes, or None when it does not apply.


def lines_of(b):
    return b.split(b"\n")[:-1] if b.endswith(b"\n") else b.split(b"\n")


def join(ls, final=True):
    return b"\n".join(ls) + (b"\n" if final else b"")


def torn_tail(b, r):
    ls = lines_of(b)
    last = ls[-1]
    cut = r.randrange(1, max(2, len(last)))
    return join(ls[:-1]) + last[:cut]


def torn_middle(b, r):
    ls = lines_of(b)
    if len(ls) < 3:
        return None
    i = r.randrange(1, len(ls) - 1)
    ls[i] = ls[i][: r.randrange(1, max(2, len(ls[i])))]
    return join(ls)


def glued(b, r):
    ls = lines_of(b)
    if len(ls) < 3:
        return None
    i = r.randrange(1, len(ls) - 1)
    return join(ls[:i] + [ls[i] + ls[i + 1]] + ls[i + 2:])


def torn_glued(b, r):
    # a torn write, then the next record appended onto it (the apps do not check the last byte)
    ls = lines_of(b)
    if len(ls) < 3:
        return None
    i = r.randrange(1, len(ls) - 1)
    stub = ls[i][: r.randrange(1, max(2, len(ls[i])))]
    return join(ls[:i] + [stub + ls[i + 1]] + ls[i + 2:])


def nul_tail(b, r):
    k = r.randrange(1, max(2, min(len(b), 4096)))
    return b[:-k] + b"\x00" * k


def nul_middle(b, r):
    if len(b) < 16:
        return None
    s = r.randrange(0, len(b) - 8)
    k = r.randrange(1, min(4096, len(b) - s))
    return b[:s] + b"\x00" * k + b[s + k:]


def all_nul(b, r):
    return b"\x00" * len(b)


def prefix_lines(b, r):
    ls = lines_of(b)
    if len(ls) < 2:
        return None
    return join(ls[: r.randrange(1, len(ls))])


def no_final_newline(b, r):
    return b[:-1] if b.endswith(b"\n") else None


def dup_line(b, r):
    ls = lines_of(b)
    i = r.randrange(0, len(ls))
    return join(ls[: i + 1] + [ls[i]] + ls[i + 1:])


def invalid_utf8_in_string(b, r):
    # a byte that is not UTF-8 inside a string value (a text the model or the user wrote)
    spots = [i for i in range(1, len(b) - 1) if b[i:i + 1] == b" " and b[i - 1:i].isalpha()]
    if not spots:
        return None
    i = r.choice(spots)
    return b[:i] + r.choice([b"\xff", b"\xe2\x28", b"\xc3", b"\xed\xa0\x80"]) + b[i:]


def raw_newline(b, r):
    # a record split by a raw newline: one "\n" escape inside a string written as the byte
    # itself (a writer that did not escape a tool's output: Copilot #2649)
    spots = [i for i in range(1, len(b) - 1) if b[i:i + 2] == b"\\n" and b[i - 1:i] != b"\\"]
    if not spots:
        return None
    i = r.choice(spots)
    return b[:i] + b"\n" + b[i + 2:]


def random_byte(b, r):
    i = r.randrange(0, len(b))
    return b[:i] + bytes([r.randrange(0, 256)]) + b[i + 1:]


def empty(b, r):
    return b""


CLASSES = {
    "torn_tail": torn_tail, "torn_middle": torn_middle, "glued": glued, "torn_glued": torn_glued,
    "nul_tail": nul_tail, "nul_middle": nul_middle, "all_nul": all_nul, "prefix_lines": prefix_lines,
    "no_final_newline": no_final_newline, "dup_line": dup_line, "invalid_utf8_in_string": invalid_utf8_in_string,
    "random_byte": random_byte, "empty": empty, "raw_newline": raw_newline,
}
# Classes that leave no broken bytes behind: a file damaged only so is what an app may write or
# keep, and a "damaged" verdict on it while the app resumes it whole is a false damage. (A last
# record without its '\n' is not one: the three apps append without looking at the last byte,
# so their next record would be glued onto it.)
CLEAN = {"prefix_lines", "dup_line", "invalid_utf8_in_string"}


# Cases decided otherwise on purpose, or that only look like disagreements: (app, class, a test
# of the case and the healthy message count) -> why.
EXPLAINED = [
    ("codex", "dup_line", lambda c, healthy: "reused or decreasing" in (c.get("detail") or ""),
     "codex.md: duplicate ordinals are report-only (0.169.0 rebuilds its projection; 0.146-0.153 froze on them, #43142); never renumbered"),
    ("gemini", "invalid_utf8_in_string", lambda c, healthy: "silent-loss" in c["dis"] and c["app"]["messages"] >= healthy,
     "the damaged copy is in an earlier $set.messages checkpoint that a later one replaces (the loader keeps the last): "
     "the app sends every message, from the later copy; the oracle's lenient scan counts the damaged copy as an item of its own"),
    ("qwen", "dup_line", lambda c, healthy: "false-damage" in c["dis"] and c.get("doubled"),
     "qwen-code.md: a repeated user or assistant record is a second fragment of its uuid; Qwen concatenates the parts and "
     "sends the text twice in one message, which the oracle's dups (items sent twice) does not count"),
    ("copilot", "invalid_utf8_in_string", lambda c, healthy: "false-damage" in c["dis"] and c["app"].get("rewritten"),
     "copilot-cli.md: serde reads each line strictly; Copilot refuses the line and rewrites the file without it (its own "
     "repair): the line was one whose loss the oracle cannot see (the system prompt, which Copilot sends anew)"),
    ("copilot", "dup_line", lambda c, healthy: "false-damage" in c["dis"] and c["app"]["messages"] > healthy,
     "a repeated tool request: Copilot sends a made-up second call answered \"interrupted\" (more items, none twice)"),
]


def explained(app, klass, case, healthy):
    for a, k, test, why in EXPLAINED:
        if a == app and k == klass and test(case, healthy):
            return why
    return ""


def sm(binary, args, timeout=120):
    p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def policy(path, preset, root, state):
    with open(path, "w") as f:
        f.write(f"version: 1\nstate_dir: {state}\nrules:\n  - {{name: c, preset: {preset}, paths: [{root}]}}\n")


def run_sm(binary, command, home, preset, sub, work):
    """sessionmedic `command -json` with the app's preset over home: exit code, reports, stderr."""
    pol = os.path.join(work, command + ".yaml")
    policy(pol, preset, os.path.join(home, sub), os.path.join(work, command + "-state"))
    rc, out, err = sm(binary, [command, "-json", "-config", pol])
    return rc, [json.loads(l) for l in out.splitlines() if l.startswith("{")], err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("app", choices=sorted(PRESET))
    ap.add_argument("n", type=int)
    ap.add_argument("--samples", default=os.environ.get("ORACLE_SAMPLES", "oracle-samples"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="conformance-out")
    ap.add_argument("--bin", default="sessionmedic")
    ap.add_argument("--oracles", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "oracles"))
    ap.add_argument("--classes", help="comma-separated classes (default: all)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.oracles))
    import oracle  # noqa: E402 (the oracles' harness)

    preset, sub = PRESET[a.app]
    with open(os.path.join(a.samples, "manifest.json")) as f:
        manifest = json.load(f)
    samples = [(k, v) for k, v in sorted(manifest.items()) if v["app"] == a.app]
    if not samples:
        raise SystemExit(f"no {a.app} sample in {a.samples}/manifest.json (make_samples.py --only {a.app})")
    classes = a.classes.split(",") if a.classes else sorted(CLASSES)
    os.makedirs(os.path.join(a.out, "repro"), exist_ok=True)
    # What each healthy sample gives, as the baseline (Gemini itself sends some tool results twice).
    base = {name: oracle.resume(a.app, os.path.join(a.samples, name), s["id"]) for name, s in samples}
    r = random.Random(a.seed)
    results = open(os.path.join(a.out, f"results-{a.app}.jsonl"), "a")
    summary = {}
    t0 = time.time()
    for n in range(a.n):
        name, s = r.choice(samples)
        klass = classes[n % len(classes)]
        src = os.path.join(a.samples, name)
        work = tempfile.mkdtemp(prefix="conformance-")
        try:
            home = os.path.join(work, "home")
            shutil.copytree(src, home, symlinks=True)
            path = os.path.join(home, s["file"])
            with open(path, "rb") as f:
                orig = f.read()
            dmg = CLASSES[klass](orig, r)
            if dmg is None or dmg == orig:
                continue
            with open(path, "wb") as f:
                f.write(dmg)
            healed = os.path.join(work, "healed")
            shutil.copytree(home, healed, symlinks=True)
            _, reps, err = run_sm(a.bin, "check", home, preset, sub, work)
            rep = next((x for x in reps if x.get("path", "").endswith(s["file"])), None)
            verdict = rep["verdict"] if rep else "none"
            warnings = rep.get("warnings") or [] if rep else []
            A = oracle.resume(a.app, home, s["id"], markers=True)
            case = {"n": n, "class": klass, "sample": name, "verdict": verdict, "kind": rep.get("kind") if rep else None,
                    "detail": rep.get("detail") if rep else None,
                    "warnings": warnings, "app": {k: A.get(k) for k in ("ok", "messages", "dropped", "dups", "file_items", "rewritten", "error")}}
            # A text sent doubled within one item (Qwen concatenates a repeated record's parts).
            case["doubled"] = [m for m in (A.get("sent") or []) if m.startswith("t:") and len(m) > 3 and
                               len(m[2:]) % 2 == 0 and m[2:len(m[2:]) // 2 + 2] * 2 == m[2:]][:3]
            H = None
            if verdict == "damaged":
                _, hreps, _ = run_sm(a.bin, "heal", healed, preset, sub, work)
                hrep = next((x for x in hreps if x.get("path", "").endswith(s["file"])), None)
                case["action"] = hrep.get("action") if hrep else None
                case["strategy"] = hrep.get("strategy") if hrep else None
                if case["action"] == "healed":
                    H = oracle.resume(a.app, healed, s["id"], markers=True)
                    case["healed_app"] = {k: H.get(k) for k in ("ok", "messages", "dropped", "dups", "file_items", "rewritten", "error")}
            # Disagreements.
            dis = []
            if verdict == "healthy" and not warnings and A.get("dropped"):
                dis.append("silent-loss")
            if H is not None:
                in_file = set(A.get("in_file") or [])
                lost = [m for m in dict.fromkeys(A.get("sent") or []) if m in in_file and m not in set(H.get("sent") or [])]
                if lost:
                    dis.append("heal-loses")
                    case["heal_lost"] = lost[:6]
                dups = max(A.get("dups") or 0, base[name].get("dups") or 0)
                if A.get("ok") and (not H.get("ok") or (H.get("dups") or 0) > dups):
                    dis.append("heal-breaks")
                if not A.get("ok") and H.get("ok"):
                    case["note"] = "the app refused the damaged file and resumes the healed one"
            if verdict == "damaged" and klass in CLEAN and A.get("ok") and not A.get("dropped") and \
                    (A.get("dups") or 0) <= (base[name].get("dups") or 0):
                dis.append("false-damage")
            case["dis"] = dis
            why = explained(a.app, klass, case, s.get("healthy_messages", 0))
            del case["dis"]
            if dis and why:
                case["explained"], case["explained_as"], dis = why, dis, []
            case["disagreements"] = dis
            results.write(json.dumps(case) + "\n")
            results.flush()
            st = summary.setdefault(klass, {"cases": 0, "agree": 0, "explained": 0, "disagree": {}})
            st["cases"] += 1
            if case.get("explained"):
                st["explained"] += 1
            if dis:
                for d in dis:
                    st["disagree"][d] = st["disagree"].get(d, 0) + 1
                keep = os.path.join(a.out, "repro", f"{a.app}-{n}")
                shutil.rmtree(keep, ignore_errors=True)
                os.makedirs(keep)
                with open(os.path.join(keep, "damaged" + os.path.splitext(path)[1]), "wb") as f:
                    f.write(dmg)
                with open(os.path.join(keep, "case.json"), "w") as f:
                    json.dump(case, f, indent=1)
            elif not case.get("explained"):
                st["agree"] += 1
            print(f"{n:4d} {klass:24s} {verdict:8s} app ok={A.get('ok')} msgs={A.get('messages')} dropped={A.get('dropped')}"
                  f"{' -> ' + str(case.get('action')) if verdict == 'damaged' else ''} {' '.join(dis)}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(a.out, f"summary-{a.app}.json"), "w") as f:
        json.dump({"app": a.app, "seed": a.seed, "secs": round(time.time() - t0), "classes": summary}, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
