#!/usr/bin/env python3
"""The operator configuration in config/ against promtool and against a real hepd.

- config/prometheus/hepd-alerts.yml passes `promtool check rules` (hepd-rules.yml has a ctest of
  its own, export_prometheus_rules); hepd-alerts.test.yml passes
  `promtool test rules` and fires every alert at least once; prometheus.yml passes `promtool check
  config`; every alert has a `for:`, a severity, a summary, a description and a runbook anchor that
  is a heading of daemon/export/METRICS.md.
- every PromQL expression of config/grafana/hepd-dashboard.json parses (promtool, with Grafana's
  variables filled in).
- every metric name that the rules (alerts and recording rules) and the dashboard use (`hepd_...`; `_bucket`, `_sum` and
  `_count` only on histogram families) is a family a real hepd serves, and every label they
  select, group by, print in a legend or query in a template variable is one those metrics carry
  (or `instance`/`job`, which Prometheus adds). The served names and labels come from a scrape of
  the daemon on loopback, after it was sent calls (answered, busy with a Q.850 cause, an OPTIONS
  ping) from two named capture agents, so that every family has samples.

Loopback only, free ports, every wait bounded; hepd is always stopped at the end.

  operator_config_test.py HEPD_BINARY SOURCE_DIR [PROMTOOL]
Exit 77 (skipped) when promtool (Debian: prometheus) or PyYAML (python3-yaml) is missing.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import Daemon, free_port, hep3, now_us  # noqa: E402

SKIP = 77
TARGET_LABELS = {"instance", "job"}  # added by Prometheus to every scraped series
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
DEADLINE = time.monotonic() + 100  # ctest kills the test at 120 s

failures = []


def check(what, ok, detail=""):
    print(("ok  " if ok else "BAD ") + what + (f": {detail}" if detail and not ok else ""), flush=True)
    if not ok:
        failures.append(what)


def remaining(timeout):
    return max(0.0, min(timeout, DEADLINE - time.monotonic()))


# --- the calls it is fed ----------------------------------------------------------------------

def sip(start, call_id, cseq, to_tag=True, extra=""):
    return (f"{start}\r\n"
            f"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-{call_id}-{cseq.replace(' ', '-')}\r\n"
            f"From: <sip:alice@a>;tag=ft-{call_id}\r\n"
            f"To: <sip:bob@b>{';tag=tt-' + call_id if to_tag else ''}\r\n"
            f"Call-ID: {call_id}\r\nCSeq: {cseq}\r\n{extra}Content-Length: 0\r\n\r\n")


def calls():
    """(capture id, message, from caller?) for: an answered call through agent 2001, a busy call
    (486 with a Q.850 cause) through agent 2002, and an OPTIONS ping answered by 2001."""
    ok, busy, ping = "answered-1", "busy-1", "ping-1"
    return [
        (2001, sip("INVITE sip:bob@10.0.0.2 SIP/2.0", ok, "1 INVITE", to_tag=False), True),
        (2001, sip("SIP/2.0 100 Trying", ok, "1 INVITE", to_tag=False), False),
        (2001, sip("SIP/2.0 180 Ringing", ok, "1 INVITE"), False),
        (2001, sip("SIP/2.0 200 OK", ok, "1 INVITE"), False),
        (2001, sip("ACK sip:bob@10.0.0.2 SIP/2.0", ok, "1 ACK"), True),
        (2001, sip("BYE sip:bob@10.0.0.2 SIP/2.0", ok, "2 BYE"), True),
        (2001, sip("SIP/2.0 200 OK", ok, "2 BYE"), False),
        (2002, sip("INVITE sip:bob@10.0.0.2 SIP/2.0", busy, "1 INVITE", to_tag=False), True),
        (2002, sip("SIP/2.0 486 Busy Here", busy, "1 INVITE",
                   extra='Reason: Q.850;cause=17;text="User busy"\r\n'), False),
        (2002, sip("ACK sip:bob@10.0.0.2 SIP/2.0", busy, "1 ACK"), True),
        (2001, sip("OPTIONS sip:ping@10.0.0.2 SIP/2.0", ping, "1 OPTIONS", to_tag=False), True),
        (2001, sip("SIP/2.0 200 OK", ping, "1 OPTIONS"), False),
    ]


# --- what hepd serves ------------------------------------------------------------------------

class Exposition:
    """Families (name -> type) and the label names seen on each sample name."""

    def __init__(self, text):
        self.types = {}
        self.labels = {}  # sample name -> set of label names
        for line in text.splitlines():
            m = re.match(r"# TYPE (\S+) (\S+)$", line)
            if m:
                self.types[m.group(1)] = m.group(2)
                continue
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? \S+$", line)
            if m:
                names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"', m.group(3) or ""))
                self.labels.setdefault(m.group(1), set()).update(names)

    def family(self, name):
        """The family a series name belongs to, or None if hepd serves no such series."""
        if name in self.types:
            return name
        for suffix in HISTOGRAM_SUFFIXES:
            base = name[: -len(suffix)]
            if name.endswith(suffix) and self.types.get(base) in ("histogram", "summary"):
                return base
        return None

    def series_labels(self, name):
        """Label names a series of this name carries, target labels included."""
        return self.labels.get(name, set()) | TARGET_LABELS

    def has_samples(self, family):
        if self.types.get(family) in ("histogram", "summary"):
            return any(family + s in self.labels for s in HISTOGRAM_SUFFIXES)
        return family in self.labels


# --- PromQL, as far as names and labels go ----------------------------------------------------

METRIC = re.compile(r"(?<![A-Za-z0-9_:\"])(hepd_[A-Za-z0-9_]+)")
SELECTOR = re.compile(r"(hepd_[A-Za-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"')
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
LEGEND = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def strip_strings(expr):
    """The expression without its string literals (label values may hold anything)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def check_expression(where, expr, served, legend=""):
    """Every hepd_ name in expr is served, every label it selects is on that series, every label
    it groups by or prints is on one of the expression's series. Returns the problems found."""
    problems = []
    names = set(METRIC.findall(strip_strings(expr)))
    union = set(TARGET_LABELS)
    for name in sorted(names):
        family = served.family(name)
        if family is None:
            problems.append(f"{where}: {name} is not served by hepd")
            continue
        if not served.has_samples(family):
            problems.append(f"{where}: {family} had no samples, its labels are unknown")
        union |= served.series_labels(name)
    for name, matchers in SELECTOR.findall(expr):
        if served.family(name) is None:
            continue
        for label in MATCHER.findall(matchers):
            if label not in served.series_labels(name):
                problems.append(f"{where}: {name} has no label {label!r} (it has {sorted(served.series_labels(name))})")
    for group in GROUPING.findall(strip_strings(expr)):
        for label in (l.strip() for l in group.split(",") if l.strip()):
            if label not in union:
                problems.append(f"{where}: groups by {label!r}, which none of {sorted(names)} carries")
    for label in LEGEND.findall(legend):
        if label not in union:
            problems.append(f"{where}: legend prints {label!r}, which none of {sorted(names)} carries")
    return problems, names


def grafana_to_promql(expr):
    """A Grafana query with its variables filled in, so that promtool can parse it."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h")
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", ".*", expr)


def heading_anchors(markdown):
    """GitHub's anchors of the Markdown headings."""
    anchors = set()
    for line in markdown.splitlines():
        m = re.match(r"#{1,6} (.+)$", line)
        if m:
            title = m.group(1).strip().lower()
            anchors.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return anchors


def promtool(tool, *args, cwd=None):
    p = subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=remaining(60))
    return p.returncode, (p.stdout + p.stderr).strip()


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    hepd, source = sys.argv[1], sys.argv[2]
    tool = sys.argv[3] if len(sys.argv) > 3 else (shutil.which("promtool") or "")
    if not tool or not os.access(tool, os.X_OK):
        print("promtool not found (Debian package: prometheus): skipped")
        sys.exit(SKIP)
    try:
        import yaml
    except ImportError:
        print("PyYAML not found (Debian package: python3-yaml): skipped")
        sys.exit(SKIP)

    prom_dir = os.path.join(source, "config", "prometheus")
    rules_path = os.path.join(prom_dir, "hepd-alerts.yml")
    tests_path = os.path.join(prom_dir, "hepd-alerts.test.yml")
    dashboard_path = os.path.join(source, "config", "grafana", "hepd-dashboard.json")
    metrics_md = open(os.path.join(source, "daemon", "export", "METRICS.md")).read()

    # promtool on the files as shipped.
    rc, out = promtool(tool, "check", "rules", rules_path)
    check("promtool check rules hepd-alerts.yml", rc == 0, out)
    rc, out = promtool(tool, "test", "rules", os.path.basename(tests_path), cwd=prom_dir)
    check("promtool test rules hepd-alerts.test.yml", rc == 0, out)
    rc, out = promtool(tool, "check", "config", "prometheus.yml", cwd=prom_dir)
    check("promtool check config prometheus.yml", rc == 0, out)

    rules = [r for g in yaml.safe_load(open(rules_path))["groups"] for r in g["rules"]]
    alerts = [r for r in rules if "alert" in r]
    # The recording rules (tested by ctest export_prometheus_rules) name served metrics too.
    rules += [r for g in yaml.safe_load(open(os.path.join(prom_dir, "hepd-rules.yml")))["groups"] for r in g["rules"]]
    check("the rule file has alerts", len(alerts) >= 10, str(len(alerts)))
    fired = set()
    for case in yaml.safe_load(open(tests_path))["tests"]:
        for t in case.get("alert_rule_test", []):
            if t.get("exp_alerts"):
                fired.add(t["alertname"])
    anchors = heading_anchors(metrics_md)
    for r in alerts:
        name = r["alert"]
        ann = r.get("annotations", {})
        check(f"{name}: fired by a promtool test", name in fired)
        check(f"{name}: has for, severity, summary, description", "for" in r and "severity" in r.get("labels", {})
              and bool(ann.get("summary")) and bool(ann.get("description")))
        anchor = ann.get("runbook", "").partition("#")[2]
        check(f"{name}: runbook section #{anchor} is a heading of METRICS.md", anchor in anchors)

    dashboard = json.load(open(dashboard_path))
    queries = []  # (where, expr, legend)
    for panel in dashboard["panels"]:
        for t in panel.get("targets", []):
            queries.append((f"panel {panel['title']!r}", t["expr"], t.get("legendFormat", "")))
    check("the dashboard has queries", len(queries) >= 40, str(len(queries)))
    check("the dashboard's schemaVersion is 38", dashboard.get("schemaVersion") == 38)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    check("the dashboard has a Prometheus datasource variable",
          variables.get("datasource", {}).get("type") == "datasource" and variables["datasource"].get("query") == "prometheus")

    # Grafana's queries parse: promtool checks them as recording rules.
    work = tempfile.mkdtemp(prefix="hepd-operator-config.")
    daemon = None
    try:
        check_file = os.path.join(work, "dashboard-queries.yml")
        with open(check_file, "w") as f:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
                {"record": f"dashboard:query_{i}", "expr": grafana_to_promql(expr)} for i, (_, expr, _) in enumerate(queries)]}]}, f)
        rc, out = promtool(tool, "check", "rules", check_file)
        check("every dashboard query parses (promtool)", rc == 0, out)

        # What a real hepd serves, once it has seen calls from both named agents.
        config = os.path.join(work, "hepd.yaml")
        with open(config, "w") as f:
            f.write("agents:\n"
                    "  - {name: kamailio-edge, capture_id: 2001}\n"
                    "  - {name: asterisk-pbx, capture_id: 2002}\n"
                    # A relay destination, so that the hepd_relay_* families the alerts use are served.
                    f"relay:\n  - {{name: homer, address: \"127.0.0.1:{free_port(socket.SOCK_DGRAM)}\"}}\n")
        daemon = Daemon(hepd, work, config, DEADLINE)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        caller, callee = ("10.0.0.1", 5060), ("10.0.0.2", 5060)
        for capture_id, message, forward in calls():
            src, dst = (caller, callee) if forward else (callee, caller)
            udp.sendto(hep3(message, now_us(), capture_id, src, dst), ("127.0.0.1", daemon.hep_port))
            time.sleep(0.002)
        udp.close()

        def traffic_seen(scrape):
            s = Exposition(scrape.text)
            return all(s.has_samples(f) for f in s.types)

        text = daemon.wait(traffic_seen, timeout=15).text
        served = Exposition(text)
        hepd_families = sorted(f for f in served.types if f.startswith("hepd_"))
        check("hepd serves its catalogue", len(hepd_families) > 50, str(len(hepd_families)))
        silent = [f for f in hepd_families if not served.has_samples(f)]
        check("every hepd family has samples after the calls (so its labels are known)", not silent, str(silent))
        for family, label in (("hepd_hep_packets_total", "agent"), ("hepd_sip_q850_causes_total", "cause"),
                              ("hepd_sip_transactions_total", "outcome")):
            check(f"{family} carries {label}", label in served.series_labels(family))

        # The rules and the dashboard against it.
        used = set()
        problems = []
        for r in rules:
            found, names = check_expression(f"rule {r.get('alert') or r.get('record')}", r["expr"], served)
            problems += found
            used |= names
        for where, expr, legend in queries:
            found, names = check_expression(where, expr, served, legend)
            problems += found
            used |= names
        for name, v in variables.items():
            if v.get("type") != "query":
                continue
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.match(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$", q)
            if not m:
                problems.append(f"variable {name}: not label_values(metric, label): {q}")
                continue
            found, names = check_expression(f"variable {name}", m.group(1), served, "{{" + m.group(2) + "}}")
            problems += found
            used |= names
        for p in problems:
            print("    " + p)
        check("every metric and label of the rules and the dashboard is served by hepd", not problems,
              f"{len(problems)} problems")
        check("the rules and the dashboard use hepd metrics", len(used) >= 40, str(len(used)))
        print(f"checked {len(used)} metric names against {len(hepd_families)} families served")

        check("hepd exits 0 on SIGTERM", daemon.stop() == 0)
    finally:
        if daemon is not None:
            daemon.stop()
            if failures:
                print("--- hepd log\n" + daemon.text()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
