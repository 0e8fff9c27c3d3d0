"""Issue 25.6/25.7: the hand-walked config reader (dbwatch/config.py at REV, loaded beside the
tree's) against the schema reader (dbwatch/config/), on random configs: half shaped like valid
ones, half with wrong types, unknown keys, unset ${VAR}s; with the catalogue or without.
A valid config must give an equal Config (asdict), an invalid one the same problems.

    cd <tree> && PYTHONPATH=. python contrib/config_differential.py [N=20000] [SEED=1] [REV=3180539]

"order_only" counts the one known difference: in one [[targets]] table with a bad name and a
bad url, name's problem now comes first (TargetConfig declares name before url).
"""
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import asdict

sys.path.insert(0, os.getcwd())
import dbwatch.config as new
from dbwatch.catalogue import load_catalogue
from dbwatch.errors import ConfigError

REV = sys.argv[3] if len(sys.argv) > 3 else "3180539"
_src = subprocess.run(["git", "show", f"{REV}:dbwatch/config.py"], capture_output=True, text=True, check=True).stdout
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as _tmp:
    _tmp.write(_src)
spec = importlib.util.spec_from_file_location("dbwatch._config_old", _tmp.name)
old = importlib.util.module_from_spec(spec); sys.modules[spec.name] = old; spec.loader.exec_module(old)
os.unlink(_tmp.name)

os.environ["DBW_SET"] = "value-of-set"
CAT = load_catalogue()
STR = ["", "x", "15s", "-1s", "0s", "0", "soon", "http://a", "https://b/x", "ftp://x", "postgresql://u@h/db",
       "postgres://h", "mysql://m:pw@h/app", "mysql://x@h:99999/db", "postgresql://[::1/db", "${DBW_SET}", "${DBW_UNSET}",
       "text", "json", "warning", "critical", "webhook", "slack", "alertmanager", "pagerduty", "a" * 32,
       "short", "longtoken1", "PG001", "PG999", "[", "^pid 1$", "t1", "target2", "5k", "1h30m", "250ms"]
SCAL = [0, 1, -1, 5, 100, 0.5, -2.0, 0.0, True, False]
LST = [["a"], [], ["http://a", "https://b"], ["http://a"], [1], ["PG001", "XX1"], ["x", 2], ["[", "ok"], ["ftp://z", "http://y"]]
DCT = [{}, {"warning": "5m"}, {"warning": "soon"}, {"x": 1}, {"critical": "1m", "unit": "count"}, {"unit": "bad"},
       {"warning": 10, "critical": 100}]

def val(r, keyhint=None):
    c = r.random()
    if c < 0.55: return r.choice(STR)
    if c < 0.75: return r.choice(SCAL)
    if c < 0.92: return r.choice(LST)
    return dict(r.choice(DCT))

KEYS = {
 "targets": ["name", "url", "interval", "databases", "all_databases", "retry_after", "primary", "log_file", "password_file", "every"],
 "terminate": ["enabled", "dry_run", "rules", "after", "protect_users", "protect_apps", "max_per_cycle", "include_superusers", "x"],
 "alerts": ["kind", "url", "secret", "min_severity", "repeat_interval", "send_resolved", "timeout", "name", "routing_key", "urls"],
 "daemon": ["state", "metrics_address", "log_format", "retention", "max_connections_per_server", "cycle_timeout", "missed_cycles", "foo"],
 "state": ["url", "schema", "lease_ttl", "x"],
 "http": ["address", "token", "tls"],
 "rule": ["thresholds", "for", "params", "ignore", "enabled", "bogus"],
}

def table(r, section, good):
    t = {}
    for k in KEYS[section]:
        if r.random() < (0.5 if not good else 0.35):
            t[k] = val(r)
    if section == "alerts" and r.random() < 0.7:
        t["kind"] = r.choice(["webhook", "slack", "alertmanager", "pagerduty"])
    if section == "targets" and r.random() < 0.7:
        t["url"] = r.choice(["mysql://m@h/app", "postgresql://u@h/db", "mysql://m:${DBW_SET}@h/app"])
    return t

def gen(r):
    good = r.random() < 0.5
    d = {}
    if r.random() < 0.1: d["colour"] = val(r)
    for arr in ("targets", "alerts"):
        c = r.random()
        if c < 0.08: d[arr] = val(r)
        elif c < 0.8: d[arr] = [table(r, arr, good) if r.random() < 0.93 else val(r) for _ in range(r.randint(0, 3))]
    for tab in ("terminate", "daemon", "state", "http"):
        c = r.random()
        if c < 0.05: d[tab] = val(r)
        elif c < 0.6: d[tab] = table(r, tab, good)
    c = r.random()
    if c < 0.05: d["rules"] = val(r)
    elif c < 0.7:
        rules = {}
        for rid in r.sample(sorted(CAT) + ["PG999", "XX1"], r.randint(0, 4)):
            if r.random() < 0.07: rules[rid] = val(r); continue
            t = table(r, "rule", good)
            if rid in CAT and r.random() < 0.5:
                ps = list(CAT[rid].params) + ["nope"]
                t["params"] = {p: val(r) for p in r.sample(ps, min(len(ps), r.randint(0, 2)))}
            rules[rid] = t
        d["rules"] = rules
    return d

def run(mod, d, cat):
    try:
        return ("ok", asdict(mod.parse_config(d, "f.toml", cat)))
    except ConfigError as e:
        return ("err", list(e.problems))

import re as _re


def name_first(probs):
    """The old list with each target's name problems moved before its url problems."""
    out = list(probs)
    for i in range(len(out)):
        for j in range(len(out) - 1):
            m1 = _re.match(r"f.toml: targets\[(\d+)\]\.url:", out[j]); m2 = _re.match(r"f.toml: targets\[(\d+)\]\.name:", out[j + 1])
            if m1 and m2 and m1.group(1) == m2.group(1) and "environment variable" not in out[j]:
                out[j], out[j + 1] = out[j + 1], out[j]
    return out

GOOD = {
 "targets": {"name": ["a", "b", "c", ""], "url": ["mysql://m@h/app", "postgresql://u@h/db", "mysql://m:${DBW_SET}@h/app"],
             "interval": ["15s", 30, 0.5, "1m"], "databases": [["a", "b"], []], "all_databases": [True, False],
             "retry_after": ["90s", 60], "primary": ["a", ""], "log_file": ["/var/log/x", ""], "password_file": ["/etc/pw", ""]},
 "terminate": {"enabled": [True, False], "dry_run": [True, False], "rules": [["PG001"], ["MY002", "PG201"]], "after": ["10m", 5],
               "protect_users": [["a"]], "protect_apps": [["psql"]], "max_per_cycle": [0, 5], "include_superusers": [True, False]},
 "alerts": {"kind": ["webhook", "slack", "alertmanager", "pagerduty"], "url": ["http://a", "https://b/x"], "secret": ["sekrit-123", ""],
            "min_severity": ["warning", "critical"], "repeat_interval": ["1h", 60], "send_resolved": [True, False],
            "timeout": ["2s", 3], "name": ["n1", "", "n2"], "routing_key": ["a" * 32]},
 "daemon": {"state": ["/tmp/s.db"], "metrics_address": ["127.0.0.1:9"], "log_format": ["text", "json"], "retention": ["3d"],
            "max_connections_per_server": [0, 4], "cycle_timeout": ["5s", 1], "missed_cycles": [1, 7]},
 "state": {"url": ["postgresql://u@h/s"], "schema": ["x"], "lease_ttl": ["15s"]},
 "http": {"address": ["127.0.0.1:1"], "token": ["0123456789"]},
 "rule": {"thresholds": [{"warning": "1m"}, {"critical": "2h"}, {}], "for": ["0s", "1m"], "ignore": [["^x$"], []], "enabled": [True, False]},
}
def gtable(r, section):
    t = {k: r.choice(v) for k, v in GOOD[section].items() if r.random() < 0.5}
    if section == "alerts":
        if t.get("kind") == "alertmanager" and r.random() < 0.5: t["url"] = ["http://a", "http://b"]
        if t.get("kind") == "pagerduty": t.pop("secret", None); t["routing_key"] = "k" * 32
        else: t.pop("routing_key", None)
    if section == "targets": t.setdefault("url", "mysql://m@h/app"); t.pop("name", None)
    return t
def ggen(r):
    d = {}
    if r.random() < 0.8: d["targets"] = [gtable(r, "targets") for _ in range(r.randint(0, 3))]
    if r.random() < 0.8: d["alerts"] = [gtable(r, "alerts") for _ in range(r.randint(0, 3))]
    for tab in ("terminate", "daemon", "state", "http"):
        if r.random() < 0.6: d[tab] = gtable(r, tab)
    if r.random() < 0.7:
        d["rules"] = {rid: gtable(r, "rule") for rid in r.sample(sorted(CAT), r.randint(0, 4))}
        for rid, t in d["rules"].items():
            if CAT[rid].params and r.random() < 0.5:
                p = r.choice(sorted(CAT[rid].params)); t["params"] = {p: CAT[rid].params[p]}
    return d

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
r = random.Random(seed)
same = diff = oks = orderonly = 0
for i in range(n):
    d = ggen(r) if i % 2 else gen(r)
    cat = CAT if r.random() < 0.8 else None
    a, b = run(old, d, cat), run(new, d, cat)
    oks += a[0] == "ok"
    if a == b: same += 1; continue
    if a[0] == b[0] == "err" and sorted(a[1]) == sorted(b[1]) and name_first(a[1]) == b[1]:
        orderonly += 1
        if orderonly <= 3: print("ORDER", d, "\n old", a[1], "\n new", b[1])
        continue
    diff += 1
    if diff <= 5: print("DIFF", d, "\n old", a, "\n new", b)
print(f"cases={n} identical={same} ok_configs={oks} order_only={orderonly} differing={diff}")
sys.exit(1 if diff else 0)
