#!/usr/bin/env python3
"""`hepd pcap --json` on public third-party captures (tests/fixtures/third-party/README.md): the
SIP messages it finds must be the ones tshark finds, and each call must end as its flow says.
Expected figures were read with tshark (commands in that README), not from hepd. A missing
capture fails the test.

  pcap_third_party_test.py HEPD FIXTURES_DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402

HEPD, FIXTURES = sys.argv[1:3]


def run_pcap(path, cores):
    p = subprocess.run([HEPD, "pcap", path, "--cores", str(cores), "--json", "-"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, json.loads(p.stdout)


def sip_counts(report):
    """Requests by method and responses by status class, as tshark's table gives them."""
    sip = report["sip"]
    requests = dict(sip["requests"])
    responses = {}
    for by_class in sip["responses"].values():
        for cls, n in by_class.items():
            responses[cls] = responses.get(cls, 0) + n
    return requests, responses


# name: (SIP messages, requests by method, responses by class, outcomes by call id, final codes)
EXPECTED = {
    "aaa.pcap": (
        81,
        {"INVITE": 11, "ACK": 7, "CANCEL": 11, "REGISTER": 18},
        {"1xx": 8, "2xx": 3, "4xx": 23},
        {"failed": 4},
        {"105090259-446faf7a@192.168.1.2": 408, "85216695-42dcdb1d@192.168.1.2": 403,
         "24487391-449bf2a0@192.168.1.2": 403, "11894297-4432a9f8@192.168.1.2": 480},
    ),
    "ipip.pcap": (4, {"INVITE": 1, "BYE": 1}, {"1xx": 1, "2xx": 1}, {"completed": 1}, {}),
    "sip_tcp_websocket.pcap": (
        39,
        {"INVITE": 5, "ACK": 5, "BYE": 4, "OPTIONS": 1},
        {"1xx": 14, "2xx": 9, "4xx": 1},
        {"completed": 2},
        {},
    ),
}

for name, (messages, requests, responses, finished, failed_codes) in EXPECTED.items():
    path = os.path.join(FIXTURES, name)
    if not os.path.exists(path):
        check(f"{name}: fixture present", False, True)
        continue
    reports = {}
    for cores in (1, 2):
        rc, r = run_pcap(path, cores)
        reports[cores] = r
        tag = f"{name} [{cores} core(s)] "
        check(tag + "exit status", rc, 0)
        got_requests, got_responses = sip_counts(r)
        check(tag + "SIP messages (tshark)", sum(got_requests.values()) + sum(got_responses.values()), messages)
        check(tag + "requests by method", got_requests, requests)
        check(tag + "responses by class", got_responses, responses)
        check(tag + "SIP parse errors", r["sip"]["parse_errors"], {})
        check(tag + "dialog anomalies", r["sip"]["anomalies"], {})
        check(tag + "calls", r["dialogs"]["created"], sum(finished.values()))
        check(tag + "outcomes", r["dialogs"]["finished"], finished)
        check(tag + "still open at the end", r["dialogs"]["active_at_end"], {})
        check(tag + "final codes of the failed calls",
              {c["call_id"]: c["final_status"] for c in r["dialogs"]["failed_calls"]}, failed_codes)
        check(tag + "decode errors", {k: v for k, v in r["capture"]["decode_errors"].items() if k != "not_ip"}, {})
    for section in ("capture", "sip", "dialogs"):
        check(f"{name}: 1 and 2 shards agree on {section}", reports[2][section], reports[1][section])

rc, r = run_pcap(os.path.join(FIXTURES, "ipip.pcap"), 1)
check("ipip.pcap: packets taken out of IP-in-IP", r["capture"]["tunnelled"], {"ip_in_ip": 2})
rc, r = run_pcap(os.path.join(FIXTURES, "sip_tcp_websocket.pcap"), 1)
ws = r["capture"]["tcp"]["websocket"]
check("sip_tcp_websocket.pcap: WebSocket upgrades (both directions)", ws["upgrades"], 2)
check("sip_tcp_websocket.pcap: SIP messages over WebSocket", ws["messages"], 11)
check("sip_tcp_websocket.pcap: WebSocket errors", ws["errors"], {})
sys.exit(1 if failures else 0)
