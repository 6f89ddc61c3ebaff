#!/usr/bin/env python3
"""The live daemon tells its service manager what systemd's Type=notify and WatchdogSec= expect
(sd_notify(3)): READY=1 once it serves, WATCHDOG=1 every half watchdog period while it runs,
STOPPING=1 when SIGTERM stops it. A datagram socket in a temporary directory stands in for
systemd, as NOTIFY_SOCKET names it.

- READY=1 arrives, and a scrape of /metrics answers as soon as it has;
- with WATCHDOG_USEC=400000 the watchdog is petted (about every 0.2 s; at least twice in 1.5 s,
  bounds loose enough for a sanitizer build or qemu-user);
- SIGTERM: exit status 0 and STOPPING=1;
- WATCHDOG_PID naming another process (a child that inherited its parent's variables): READY=1,
  and no WATCHDOG=1;
- a NOTIFY_SOCKET that is not a socket address: a warning in the log, and the daemon serves;
- with JOURNAL_STREAM set (standard error to the journal), every log line starts with the
  priority prefix journald reads (sd-daemon(3)): <6> for info, <4> for a warning.

Loopback and a temporary directory only; every wait bounded; hepd is always stopped.

  service_notify_test.py HEPD_BINARY
"""
import os
import re
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, Daemon, failures  # noqa: E402

HEPD = sys.argv[1]
DEADLINE = time.monotonic() + 100  # ctest kills the test at 120 s


def receive_until(manager, want, seconds):
    """Datagrams until `want` arrives or `seconds` pass; the list of all received."""
    got = []
    end = time.monotonic() + min(seconds, max(DEADLINE - time.monotonic(), 0))
    while time.monotonic() < end:
        manager.settimeout(max(end - time.monotonic(), 0.01))
        try:
            got.append(manager.recv(256).decode())
        except socket.timeout:
            break
        if got[-1] == want:
            break
    return got


def manager_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    return s


def main():
    work = tempfile.mkdtemp(prefix="hepd-notify.")
    config = os.path.join(work, "hepd.yaml")
    with open(config, "w") as f:
        f.write("timers:\n  dialog_linger: 1s\n")
    daemons = []
    try:
        # Notified, with a watchdog.
        path = os.path.join(work, "notify")
        manager = manager_socket(path)
        d = Daemon(HEPD, work, config, DEADLINE, env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
        daemons.append(d)
        got = receive_until(manager, "READY=1", 20)
        check("READY=1 sent", "READY=1" in got, True)
        check("serving once READY=1 came", d.try_scrape() is not None, True)
        got = receive_until(manager, None, 1.5)
        check("watchdog petted at least twice in 1.5 s", got.count("WATCHDOG=1") >= 2, True)
        check("nothing but the watchdog while it runs", set(got) <= {"WATCHDOG=1"}, True)
        check("exit status after SIGTERM", d.stop(), 0)
        got = receive_until(manager, "STOPPING=1", 10)
        check("STOPPING=1 sent", "STOPPING=1" in got, True)
        manager.close()

        # The watchdog of another process: not petted.
        path = os.path.join(work, "notify-2")
        manager = manager_socket(path)
        d = Daemon(HEPD, work, config, DEADLINE,
                   env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
        daemons.append(d)
        check("READY=1 with another process's watchdog", "READY=1" in receive_until(manager, "READY=1", 20), True)
        got = receive_until(manager, None, 1.0)
        check("no WATCHDOG=1 for another process's watchdog", "WATCHDOG=1" in got, False)
        check("exit status after SIGTERM (watchdog of another process)", d.stop(), 0)
        manager.close()

        # Unusable: logged, and the daemon runs as it would without a manager.
        d = Daemon(HEPD, work, config, DEADLINE, env={"NOTIFY_SOCKET": "relative/name"})
        daemons.append(d)
        check("serving with an unusable NOTIFY_SOCKET", d.try_scrape() is not None, True)
        check("an unusable NOTIFY_SOCKET is logged", "not notifying the service manager" in d.text(), True)
        check("exit status after SIGTERM (unusable NOTIFY_SOCKET)", d.stop(), 0)

        # Standard error to the journal: the priority of each line in its <N> prefix, no time stamp.
        d = Daemon(HEPD, work, config, DEADLINE, env={"JOURNAL_STREAM": "8:1", "NOTIFY_SOCKET": "relative/name"})
        daemons.append(d)
        check("journal: exit status after SIGTERM", d.stop(), 0)
        lines = d.text().splitlines()
        check("journal: lines logged", len(lines) > 3, True)
        check("journal: lines without a priority prefix", [ln for ln in lines if not re.match(r"<[2-7]>\[", ln)], [])
        check("journal: info at <6>", any(ln.startswith("<6>[info] hepd ") for ln in lines), True)
        check("journal: warning at <4>",
              any(ln.startswith("<4>[warning] not notifying the service manager") for ln in lines), True)
    finally:
        for d in daemons:
            d.stop()
        if failures:
            for d in daemons:
                print("---- hepd log ----\n" + d.text()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED: " + ", ".join(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
