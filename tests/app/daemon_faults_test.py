#!/usr/bin/env python3
"""Faults against the real daemon, one per run (the second argument names it):

  kill              SIGKILL under load, then a restart on the same state directory: the calls of
                    the last snapshot are back, those signalled after it are lost (and logged as a
                    gap), nothing else lost or doubled.
  state_dir         a state directory that is not a directory (exit 73 at start-up); one that
                    turns read-only, and one that turns full (a file size limit: writes fail with
                    EFBIG), while hepd runs: the previous snapshot stays intact and loadable, the
                    failures are counted, hepd keeps running and a snapshot succeeds again once
                    the fault is removed.
  corrupt_snapshot  a truncated snapshot, and one with a bit flipped in its frame header, at
                    start-up: refused with a log line, counted, moved aside, hepd starts empty,
                    takes calls in and still exits 0 on SIGTERM.
  ports_taken       the HEP TCP port and the metrics port held by another socket: exit 69 with a
                    line naming the address (the HEP UDP port is tests/app/cli_test.cpp's).

Loopback only; every wait has a deadline; daemons and temporary directories are cleaned up on
failure too.

  daemon_faults_test.py HEPD_BINARY FAULT
"""
import datetime
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hepd_live  # noqa: E402
from hepd_live import check, failures, hep3, now_us, sip  # noqa: E402

HEPD = sys.argv[1]
DEADLINE = time.monotonic() + 100  # ctest's TIMEOUT is 120 s
EX_UNAVAILABLE, EX_CANTCREAT = hepd_live.EX_UNAVAILABLE, 73
ANSWERED = ("INVITE", "180", "200", "ACK")
HUNG_UP = ("BYE", "200BYE")
# The calls' dialogs stay in their tables however slow the machine (unanswered INVITEs would time
# out after 32 s, ended calls leave after 32 s): every check below expects all of them there.
LONG_TIMERS = "timers: {dialog_linger: 10m, invite_timeout: 10m}\n"
daemons = []  # every hepd started, stopped at the end whatever happened


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def start(work, config, hepd=HEPD):
    d = hepd_live.Daemon(hepd, work, config, DEADLINE)
    daemons.append(d)
    return d


def send(d, call_ids, kinds):
    """Each call's messages in order, over UDP as a proxy mirrors them."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        for call_id in call_ids:
            for kind in kinds:
                udp.sendto(hep3(sip(kind, call_id), now_us(), 7), ("127.0.0.1", d.hep_port))


def send_tcp(d, call_ids, kinds):
    """The same over one HEP/TCP connection: many calls at once, none lost to a busy machine's
    socket buffers."""
    with socket.create_connection(("127.0.0.1", d.hep_port), timeout=10) as tcp:
        tcp.sendall(b"".join(hep3(sip(kind, call_id), now_us(), 7) for call_id in call_ids for kind in kinds))


def await_snapshots(d, count, timeout=15):
    """Waits for `count` snapshots written from now on. Writes never overlap, so the tables of the
    second one were copied after this call: it holds everything the shards held before it."""
    name = "hepd_snapshot_last_success_timestamp_seconds"
    last = d.scrape().get(name)
    for _ in range(count):
        now = d.wait(lambda s: s.get(name) > last, timeout).get(name)
        if now <= last:
            return False
        last = now
    return True


def show(path):
    """`hepd snapshot show FILE` as JSON, or None when it refuses the file."""
    r = subprocess.run([HEPD, "snapshot", "show", path], capture_output=True, text=True, timeout=30)
    return json.loads(r.stdout) if r.returncode == 0 else None


def dialogs_in(snapshot, *states):
    """The Call-IDs of the snapshot's dialogs (in one of `states`, when given)."""
    if not snapshot:
        return set()
    return {d["call_id"] for d in snapshot["dialogs"] if not states or d["state"] in states}


def unix_time(iso):
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def kill(work):
    """Calls in progress and calls just completed (their records linger for retransmissions), a
    snapshot of them, more calls, SIGKILL: a restart brings back exactly what the last snapshot
    holds, says how old it is, and counts no call twice."""
    config = write(os.path.join(work, "hepd.yaml"), "state:\n  snapshot_interval: 1s\n" + LONG_TIMERS)
    state = os.path.join(work, "state")
    d = start(work, config)
    answered = [f"answered-{i}" for i in range(20)]
    completed = [f"completed-{i}" for i in range(5)]
    late = [f"late-{i}" for i in range(15)]
    send(d, answered, ANSWERED)
    send(d, completed, ANSWERED + HUNG_UP)
    check("calls in progress", d.wait_metric(20, "hepd_dialogs_active", state="confirmed"), 20)
    check("calls completed", d.wait_metric(5, "hepd_dialogs_finished_total", outcome="completed"), 5)
    check("a snapshot of them written", await_snapshots(d, 2), True)
    sent_late = time.time()
    send(d, late, ("INVITE",))
    check("late calls in the shards", d.wait_metric(40, "hepd_dialogs_active"), 40)
    killed = time.time()
    d.proc.send_signal(signal.SIGKILL)
    check("killed", d.proc.wait(timeout=10), -signal.SIGKILL)
    first_log = d.text()

    snapshot = show(os.path.join(state, "hepd.snapshot"))
    if not check("the last snapshot is loadable", snapshot is not None, True):
        print("--- log before SIGKILL\n" + first_log[-3000:])
        return
    in_file = dialogs_in(snapshot)
    as_of = unix_time(snapshot["written_at"])
    check("the last snapshot: calls in progress", dialogs_in(snapshot, "confirmed"), set(answered))
    check("the last snapshot: completed calls, as such", dialogs_in(snapshot, "terminated"), set(completed))
    if as_of < sent_late:
        check("the last snapshot predates the late calls", in_file & set(late), set())
    else:  # a snapshot came in between on a slow machine: what it holds must come back all the same
        print(f"note: a snapshot was written {as_of - sent_late:.3f} s after the late calls were sent")

    d = start(work, config)
    restored = d.scrape()
    check("dialogs restored: those of the snapshot", restored.get("hepd_dialogs_active"), float(len(in_file)))
    check("calls in progress restored", restored.get("hepd_dialogs_active", state="confirmed"), 20)
    check("completed calls restored as such", restored.get("hepd_dialogs_active", state="terminated"), 5)
    check("nothing finished twice", restored.get("hepd_dialogs_finished_total"), 0)
    check("the snapshot was not refused", restored.get("hepd_snapshot_failures_total"), 0)
    gap = re.search(r"restored state as of (\S+), ([0-9.]+) s before this start: SIP and media signalled in "
                    r"between were not seen", d.text())
    if check("the gap is logged", gap is not None, True):
        check("the gap starts at the snapshot's time", gap.group(1), snapshot["written_at"])
        seconds = float(gap.group(2))
        check("the gap covers the time since the snapshot",
              killed - as_of - 0.2 <= seconds <= time.time() - as_of + 0.2, True)

    # The calls in progress hang up; the completed ones' BYE comes again (a retransmission).
    send(d, answered + completed, HUNG_UP)
    check("restored calls completed", d.wait_metric(20, "hepd_dialogs_finished_total", outcome="completed"), 20)
    after = d.wait(lambda s: s.get("hepd_sip_requests_total", method="BYE") >= 25
                   and s.get("hepd_sip_responses_total", method="BYE") >= 25)
    check("every BYE and its answer seen", after.get("hepd_sip_requests_total", method="BYE")
          + after.get("hepd_sip_responses_total", method="BYE"), 50)
    check("calls in progress left", after.get("hepd_dialogs_active", state="confirmed"), 0)
    check("completed calls held", after.get("hepd_dialogs_active", state="terminated"), 25)
    check("calls finished after the restart: only those", after.get("hepd_dialogs_finished_total"), 20)
    check("exit status after SIGTERM", d.stop(), 0)
    if failures:
        print("--- log before SIGKILL\n" + first_log[-3000:])


def with_dac_dropped(work):
    """A command that starts hepd unable to write where its file modes forbid it, or None with the
    reason. Root (as CI runs) passes every mode check through CAP_DAC_OVERRIDE: dropped from the
    bounding set, uid 0 is held to the owner bits of mode 0555 like anyone else."""
    if os.geteuid() != 0:
        return HEPD, None
    if shutil.which("setpriv") is None:
        return None, "setpriv (util-linux) not found"
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    probe = os.path.join(work, "probe")
    os.makedirs(probe)
    os.chmod(probe, 0o555)
    try:
        works = subprocess.run(drop + ["true"], capture_output=True, timeout=10).returncode == 0
        denied = subprocess.run(drop + ["sh", "-c", f"echo > {shlex.quote(probe)}/x"], capture_output=True,
                                timeout=10).returncode != 0
    finally:
        os.chmod(probe, 0o755)
    if not works or not denied:
        return None, "cannot drop CAP_DAC_OVERRIDE here (setpriv needs CAP_SETPCAP)"
    wrapper = write(os.path.join(work, "hepd-without-dac"),
                    "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in drop + [HEPD]) + ' "$@"\n')
    os.chmod(wrapper, 0o755)
    return wrapper, None


def snapshot_fault(name, work, hepd, inject, remove, reason):
    """Calls, a snapshot of them, then `inject()` while more calls come in: the snapshots fail,
    counted and logged with `reason`, the daemon carries on and the file stays the one before;
    `remove()`, and the next one holds every call. `name` starts every check's line."""
    config = write(os.path.join(work, "hepd.yaml"), "state:\n  snapshot_interval: 1s\n" + LONG_TIMERS)
    path = os.path.join(work, "state", "hepd.snapshot")
    d = start(work, config, hepd)
    before = [f"{name}-before-{i}" for i in range(20)]
    during = [f"{name}-during-{i}" for i in range(600)]
    send(d, before, ANSWERED)
    check(f"{name}: calls in progress", d.wait_metric(20, "hepd_dialogs_active"), 20)
    check(f"{name}: a snapshot of them written", await_snapshots(d, 2), True)
    kept = digest(path)
    failed = d.scrape().get("hepd_snapshot_failures_total")
    inject(d)
    send_tcp(d, during, ("INVITE",))
    check(f"{name}: calls taken in during the fault", d.wait_metric(620, "hepd_dialogs_active"), 620)
    s = d.wait(lambda s: s.get("hepd_snapshot_failures_total") >= failed + 2, timeout=15)
    check(f"{name}: failed snapshots counted, and retried", s.get("hepd_snapshot_failures_total") >= failed + 2, True)
    if not check(f"{name}: still running", d.proc.poll(), None):
        print(f"--- {name} log\n" + d.text()[-3000:])
        return
    logged = re.search(r"snapshot not written: (.*)", d.text())
    check(f"{name}: the failure logged", logged and reason in logged.group(1), True)
    check(f"{name}: the previous snapshot left as it was", digest(path), kept)
    check(f"{name}: and loadable", dialogs_in(show(path)), set(before))
    check(f"{name}: no temporary file left", os.path.exists(path + ".tmp"), False)
    remove(d)
    removed = time.time()
    s = d.wait(lambda s: s.get("hepd_snapshot_last_success_timestamp_seconds") > removed, timeout=15)
    check(f"{name}: a snapshot written once the fault is gone",
          s.get("hepd_snapshot_last_success_timestamp_seconds") > removed, True)
    check(f"{name}: it holds every call", dialogs_in(show(path)), set(before + during))
    check(f"{name}: exit status after SIGTERM", d.stop(), 0)
    if failures:
        print(f"--- {name} log\n" + d.text()[-3000:])


def state_dir(work):
    # Not a directory at all: refused before anything starts.
    blocker = write(os.path.join(work, "a-file"), "")
    not_a_dir = os.path.join(blocker, "state")
    r = subprocess.run([HEPD, "--state-dir", not_a_dir, "--hep-listen", f"127.0.0.1:{hepd_live.free_hep_port()}",
                        "--metrics-listen", f"127.0.0.1:{hepd_live.free_port()}"],
                       capture_output=True, text=True, timeout=30)
    check("state dir under a file: exit status", r.returncode, EX_CANTCREAT)
    check("state dir under a file: the line names it", f"state directory {not_a_dir}" in r.stdout + r.stderr, True)

    # Read-only while running: the directory's write bit taken away, then given back.
    read_only = os.path.join(work, "read-only")
    os.makedirs(read_only)
    hepd, why_not = with_dac_dropped(read_only)
    if hepd is None:
        print(f"SKIP read-only state directory: {why_not}")
    else:
        state = os.path.join(read_only, "state")
        snapshot_fault("read-only", read_only, hepd, lambda d: os.chmod(state, 0o555),
                       lambda d: os.chmod(state, 0o755), "Permission denied")

    # Full while running: a file size limit on the daemon below the size the snapshot grows to
    # (about 190 octets a call), above its log's; then lifted.
    full = os.path.join(work, "full")
    os.makedirs(full)
    limits = {}

    def fill(d):
        limits["before"] = resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE)
        size = max(os.path.getsize(os.path.join(full, "hepd.log")),
                   os.path.getsize(os.path.join(full, "state", "hepd.snapshot")))
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (size + 48 * 1024, limits["before"][1]))

    snapshot_fault("full", full, HEPD, fill,
                   lambda d: resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, limits["before"]), "File too large")


def corrupt_snapshot(work):
    config = write(os.path.join(work, "hepd.yaml"), "log_level: info\n")
    path = os.path.join(work, "state", "hepd.snapshot")
    d = start(work, config)
    send(d, [f"call-{i}" for i in range(5)], ANSWERED)
    check("calls in progress", d.wait_metric(5, "hepd_dialogs_active"), 5)
    check("exit status after SIGTERM", d.stop(), 0)
    good = open(path, "rb").read()
    check("a snapshot with the calls", len(dialogs_in(show(path))), 5)

    # One bit of the payload length in the frame header (daemon_lifecycle_test.py flips a payload
    # octet): caught by the header's own CRC.
    flipped = bytearray(good)
    flipped[23] ^= 0x01
    aside = set()
    for damage, data, error in (("truncated", good[:len(good) - 7], "truncated"),
                                ("bit-flipped", bytes(flipped), "checksum_mismatch")):
        open(path, "wb").write(data)
        d = start(work, config)
        s = d.scrape()
        log = d.text()
        check(f"{damage}: started empty", s.get("hepd_dialogs_active"), 0)
        check(f"{damage}: counted", s.get("hepd_snapshot_failures_total"), 1)
        check(f"{damage}: refused with its reason", f"snapshot {path} refused ({error}:" in log, True)
        moved = re.search(r"refused snapshot moved aside to (\S+)", log)
        if check(f"{damage}: moved aside", moved is not None, True):
            target = moved.group(1)
            check(f"{damage}: beside the snapshot, named for it",
                  re.fullmatch(re.escape(path) + r"\.corrupt-\d{8}T\d{6}Z(-\d+)?", target) is not None, True)
            check(f"{damage}: the refused bytes kept", open(target, "rb").read() == data, True)
            check(f"{damage}: not over an earlier one", target in aside, False)
            aside.add(target)
        check(f"{damage}: not left in place", os.path.exists(path), False)
        send(d, ["after"], ANSWERED)
        check(f"{damage}: takes calls in", d.wait_metric(1, "hepd_dialogs_active", state="confirmed"), 1)
        check(f"{damage}: exit status after SIGTERM", d.stop(), 0)
        check(f"{damage}: the next snapshot is a good one", dialogs_in(show(path)), {"after"})
        if failures:
            print(f"--- {damage} log\n" + d.text()[-3000:])
    check("every refused file kept", all(os.path.exists(a) for a in aside) and len(aside) == 2, True)

    # Restarted in a loop on a bad disk, it keeps the newest three refused files, not all of them.
    older = [f"{path}.corrupt-2020010{i}T000000Z" for i in range(1, 4)]
    for name in older:
        write(name, "refused long ago\n")
    open(path, "wb").write(good[:100])
    d = start(work, config)
    check("refused again: exit status after SIGTERM", d.stop(), 0)
    kept = sorted(n for n in os.listdir(os.path.dirname(path)) if ".corrupt-" in n)
    check("refused files kept", len(kept), 3)
    check("the oldest ones removed", any(os.path.basename(o) in kept for o in older), False)
    check("the removal logged", "removed an older refused snapshot" in d.text(), True)


def ports_taken(work):
    state = os.path.join(work, "state")

    def run(hep_port, metrics_port):
        return subprocess.run([HEPD, "--state-dir", state, "--hep-listen", f"127.0.0.1:{hep_port}", "--metrics-listen",
                               f"127.0.0.1:{metrics_port}", "--cores", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)

    # TCP only: hepd binds UDP on the same port first, which stays free.
    hep_port = hepd_live.free_hep_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", hep_port))
        squatter.listen()
        r = run(hep_port, hepd_live.free_port())
    check("HEP TCP port taken: exit status", r.returncode, EX_UNAVAILABLE)
    check("HEP TCP port taken: the line names the address",
          f"cannot listen on 127.0.0.1:{hep_port}: Address already in use" in r.stdout, True)

    metrics_port = hepd_live.free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", metrics_port))
        squatter.listen()
        r = run(hepd_live.free_hep_port(), metrics_port)
    check("metrics port taken: exit status", r.returncode, EX_UNAVAILABLE)
    line = re.search(r"cannot serve metrics on (\S+): (.*)", r.stdout)
    if check("metrics port taken: logged", line is not None, True):
        check("metrics port taken: the line names the address", line.group(1), f"127.0.0.1:{metrics_port}")
        check("metrics port taken: and why", "in use" in line.group(2), True)
    if failures:
        print(r.stdout[-3000:])


FAULTS = {"kill": kill, "state_dir": state_dir, "corrupt_snapshot": corrupt_snapshot, "ports_taken": ports_taken}


def main():
    fault = FAULTS[sys.argv[2]]
    work = tempfile.mkdtemp(prefix=f"hepd-fault-{sys.argv[2]}.")
    t0 = time.monotonic()
    try:
        fault(work)
    finally:
        for d in daemons:
            if d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait(timeout=10)
        for root, dirs, _ in os.walk(work):  # a directory left read-only by a failed check
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{sys.argv[2]}: {len(failures)} failed checks in {time.monotonic() - t0:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
