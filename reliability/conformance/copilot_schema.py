#!/usr/bin/env python3
"""Regenerate heal/apps/copilot_schema.json from a Copilot CLI package's event schema.

usage: copilot_schema.py <pkg>/schemas/session-events.schema.json VERSION > heal/apps/copilot_schema.json

Keeps of the package's JSON Schema what Copilot's loader (serde) was seen to enforce on every
event's data, at any depth: the members each object requires, the JSON types of values, the
values an enum allows, integers (no fraction or exponent). Left out: descriptions, minimums (a
negative eventCount loads), formats (1.0.52 stopped enforcing them), and additionalProperties:
false but for the structs serde was seen to close (see closed(): an unknown member in
user.message's data loads, one in session.shutdown's accounting snapshot does not).

Output: {"version": V, "defs": {name: node}, "events": {type: node of its data}}; a node is
{"t": kinds (s string, i integer, n number, b boolean, o object, a array, z null; absent: any),
 "r": [required], "p": {member: node}, "ap": node (the other members of a map), "i": node
 (items), "o": [nodes] (anyOf), "e": [allowed values], "x": 1 (no other member), "ref": def name}.
"""
import json
import sys

CODE = {"string": "s", "integer": "i", "number": "n", "boolean": "b", "object": "o", "array": "a", "null": "z"}


def closed(name):
    # The structs serde refuses unknown members in, as far as seen with 1.0.102: the usage
    # metrics snapshot session.shutdown carries (accountingSnapshot: UsageGetMetricsResult and
    # its UsageMetrics* parts; an unknown member in its codeChanges, a model metric or its
    # requests is refused), while the same member in session.shutdown's own codeChanges and
    # agentMetrics, and in every event's data tried, loads.
    return name == "UsageGetMetricsResult" or name.startswith("UsageMetrics")


def main():
    schema = json.load(open(sys.argv[1]))
    defs = schema["definitions"]

    def node(o):
        if not isinstance(o, dict):
            return {}
        if "$ref" in o:
            return {"ref": o["$ref"].split("/")[-1]}
        if o.get("x-opaque-json"):
            return {}
        n = {}
        t = o.get("type")
        if t is not None:
            n["t"] = "".join(CODE[x] for x in (t if isinstance(t, list) else [t]))
        if "const" in o:
            n["e"] = [o["const"]]
        if "enum" in o:
            n["e"] = list(o["enum"])
        if o.get("required"):
            n["r"] = list(o["required"])
        if "properties" in o:
            n["p"] = {k: node(v) for k, v in o["properties"].items()}
        ap = o.get("additionalProperties")
        if isinstance(ap, dict) and not ap.get("x-opaque-json"):
            n["ap"] = node(ap)
        if isinstance(o.get("items"), dict):
            n["i"] = node(o["items"])
        if "anyOf" in o:
            n["o"] = [node(x) for x in o["anyOf"]]
        return n

    def res(o):
        while "$ref" in o:
            o = defs[o["$ref"].split("/")[-1]]
        return o

    events = {}
    for e in defs["SessionEvent"]["anyOf"]:
        ev = res(e)
        events[ev["properties"]["type"]["const"]] = node(ev["properties"]["data"])
    out = {"version": sys.argv[2], "defs": {k: node(v) for k, v in defs.items()}, "events": events}
    for k, v in defs.items():
        if closed(k) and v.get("additionalProperties") is False:
            out["defs"][k]["x"] = 1
    json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
