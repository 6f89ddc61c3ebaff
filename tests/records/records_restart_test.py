#!/usr/bin/env python3
"""Call records across a stop and a crash (RECORDS.md, "Shutdown" and "Across a restart"):

1. A clean stop without a final snapshot (state.snapshot_on_shutdown: false): a call that ended
   just before it (still lingering) has its record at exit; a call still in progress has none
   and is counted (the exit's log line); the next start writes nothing more.
2. A crash: a periodic snapshot is taken while a call that just ended lingers, its record is
   written, then hepd is killed (SIGKILL) before the next snapshot. The restart restores that
   snapshot, and the call's record is not written a second time; a call the snapshot held in
   progress ends after the restart and has its record, once.
3. A final snapshot that fails (its temporary file's path taken by a directory: fails as root
   too): the stop is one without a final snapshot, as in 1; the older periodic snapshot is
   removed, so the restart brings back nothing and writes nothing more.

Loopback only, free ports, every wait bounded by one deadline.

  records_restart_test.py HEPD_BINARY SUPPORT_DIR
"""
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time

hepd, support = sys.argv[1], sys.argv[2]
sys.path.insert(0, support)
from hepd_live import check, Daemon, failures, hep3, now_us, sip  # noqa: E402

deadline = time.monotonic() + 150

RECORDS = """
records:
  enabled: true
  hold: 0s
  flush_interval: 0s
"""


def send(daemon, call_id, kinds):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for kind in kinds:
            s.sendto(hep3(sip(kind, call_id), now_us(), 1), ("127.0.0.1", daemon.hep_port))
            time.sleep(0.01)


def call_ids(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line)["call_id"] for line in f]


def wait_until(ready, timeout):
    limit = min(time.monotonic() + timeout, deadline)
    while time.monotonic() < limit:
        if ready():
            return True
        time.sleep(0.05)
    return ready()


def snapshots(daemon):
    """The dialog counts of the snapshots the daemon has logged, in order."""
    return [int(n) for n in re.findall(r"snapshot written to .*?, (\d+) dialogs", daemon.text())]


def part_work(work, name, config):
    part = os.path.join(work, name)
    os.makedirs(part)
    path = os.path.join(part, "hepd.yaml")
    with open(path, "w") as f:
        f.write(config)
    return part, path, os.path.join(part, "state", "records", "calls.jsonl")


def stop_without_snapshot(work):
    part, config, records = part_work(work, "no-final", RECORDS + "state:\n  snapshot_on_shutdown: false\n")
    d = Daemon(hepd, part, config, deadline)
    try:
        send(d, "ended-1", ["INVITE", "200", "ACK", "BYE", "200BYE"])
        send(d, "open-1", ["INVITE", "200", "ACK"])
        held = d.wait(lambda s: s.get("hepd_dialogs_active", state="terminated") == 1 and
                      s.get("hepd_dialogs_active", state="confirmed") == 1)
        check("no final snapshot: one call ended (lingering), one in progress",
              (held.get("hepd_dialogs_active", state="terminated"), held.get("hepd_dialogs_active", state="confirmed")),
              (1.0, 1.0))
        check("no final snapshot: no record before the stop (the call lingers 32 s)", call_ids(records), [])
    finally:
        check("no final snapshot: exit status", d.stop(), 0)
    check("no final snapshot: the ended call is recorded at the stop, the one in progress is not",
          call_ids(records), ["ended-1"])
    check("no final snapshot: the exit says so",
          "no final snapshot: 1 ended calls recorded now, 1 calls in progress have no record" in d.text(), True)
    d = Daemon(hepd, part, config, deadline)
    try:
        time.sleep(2)
    finally:
        check("no final snapshot: restart exit status", d.stop(), 0)
    check("no final snapshot: nothing more written after the restart", call_ids(records), ["ended-1"])


def crash_after_record(work):
    part, config, records = part_work(
        work, "crash", RECORDS + "timers:\n  dialog_linger: 4s\nstate:\n  snapshot_interval: 6s\n")
    d = Daemon(hepd, part, config, deadline)
    try:
        send(d, "open-2", ["INVITE", "200", "ACK"])  # in every snapshot, in progress
        wait_until(lambda: len(snapshots(d)) >= 1, 15)
        time.sleep(3)  # the next snapshot is about 3 s away
        send(d, "crash-1", ["INVITE", "200", "ACK", "BYE", "200BYE"])  # lingers 4 s
        wait_until(lambda: len(snapshots(d)) >= 2, 10)
        check("crash: the snapshot after the call's end holds it lingering (and the open call)",
              snapshots(d)[1:2], [2])
        check("crash: its record is written after that snapshot",
              wait_until(lambda: "crash-1" in call_ids(records), 10), True)
        check("crash: no later snapshot before the kill", len(snapshots(d)), 2)
    finally:
        d.proc.kill()
        d.proc.wait(timeout=10)
    d = Daemon(hepd, part, config, deadline)
    try:
        check("crash: the restart finds the record written since the snapshot",
              "1 calls restored from the snapshot have had their records written since it was taken" in d.text(),
              True)
        send(d, "open-2", ["BYE", "200BYE"])  # the restored call ends now
        check("crash: the call restored in progress is recorded when it ends",
              wait_until(lambda: "open-2" in call_ids(records), 15), True)
        # crash-1 came back lingering: its linger ran out at the restart, long before open-2's.
        check("crash: nothing restored is left in the tables",
              d.wait(lambda s: s.get("hepd_dialogs_active") == 0).get("hepd_dialogs_active"), 0.0)
    finally:
        check("crash: restart exit status", d.stop(), 0)
    check("crash: every call recorded once", sorted(call_ids(records)), ["crash-1", "open-2"])


def final_snapshot_fails(work):
    part, config, records = part_work(work, "final-fails", RECORDS + "state:\n  snapshot_interval: 2s\n")
    state = os.path.join(part, "state")
    blocker = os.path.join(state, "hepd.snapshot.tmp")
    d = Daemon(hepd, part, config, deadline)
    try:
        send(d, "ended-3", ["INVITE", "200", "ACK", "BYE", "200BYE"])
        send(d, "open-3", ["INVITE", "200", "ACK"])
        check("final snapshot fails: a periodic snapshot holds both calls",
              wait_until(lambda: 2 in snapshots(d), 15), True)
        # Snapshots are written to hepd.snapshot.tmp, then renamed: a directory there fails them.
        os.makedirs(os.path.join(blocker, "in-the-way"))
        check("final snapshot fails: no record before the stop (the call lingers 32 s)", call_ids(records), [])
    finally:
        check("final snapshot fails: exit status", d.stop(), 0)
    check("final snapshot fails: it failed, logged",
          re.search(r"snapshot not written: .*cannot create .*hepd\.snapshot\.tmp", d.text()) is not None, True)
    check("final snapshot fails: the ended call is recorded at the stop, the one in progress is not",
          call_ids(records), ["ended-3"])
    check("final snapshot fails: the exit says so",
          "final snapshot failed: 1 ended calls recorded now, 1 calls in progress have no record" in d.text(), True)
    check("final snapshot fails: the older periodic snapshot is removed",
          os.path.exists(os.path.join(state, "hepd.snapshot")), False)
    shutil.rmtree(blocker)
    d = Daemon(hepd, part, config, deadline)
    try:
        time.sleep(2)
        check("final snapshot fails: nothing restored at the restart", "restored" in d.text(), False)
    finally:
        check("final snapshot fails: restart exit status", d.stop(), 0)
    check("final snapshot fails: nothing more written after the restart", call_ids(records), ["ended-3"])


def main():
    with tempfile.TemporaryDirectory() as work:
        stop_without_snapshot(work)
        crash_after_record(work)
        final_snapshot_fails(work)
    if failures:
        print(f"FAILED: {len(failures)} checks: {failures}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
