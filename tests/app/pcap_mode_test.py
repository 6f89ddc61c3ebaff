#!/usr/bin/env python3
"""`hepd pcap` end to end: generated captures must come out exactly as the generator says, with
1 and with 2 shards; the real fixtures give the calls that are in them; a truncated file and a
garbage file give a clear error, exit 65 and a report of what was read; the report says what the
tables held at the end of the input; on a terminal it shows its progress, and nothing of it when
stderr is a pipe.

  pcap_mode_test.py HEPD HEPD_CORPUS FIXTURES_DIR
"""
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402

HEPD, CORPUS, FIXTURES = sys.argv[1:4]


def run_pcap(paths, cores):
    p = subprocess.run([HEPD, "pcap", *paths, "--cores", str(cores), "--json", "-"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, json.loads(p.stdout), p.stderr.decode()


work = tempfile.mkdtemp(prefix="hepd-pcap-test.")
try:
    # No duplicates here, so the receiver's count of lost packets equals the packets removed.
    capture = os.path.join(work, "calls.pcap")
    truth = json.loads(subprocess.run(
        [CORPUS, capture, "--calls", "400", "--media-seconds", "1", "--loss", "4", "--reorder", "2", "--jitter-ms", "5",
         "--failed", "10", "--cancelled", "5", "--interval-us", "5000"], stdout=subprocess.PIPE, check=True).stdout)
    reports = {}
    for cores in (1, 2):
        rc, r, _ = run_pcap([capture], cores)
        reports[cores] = r
        tag = f"[{cores} core(s)] "
        check(tag + "exit status", rc, 0)
        check(tag + "frames", r["capture"]["frames"], truth["packets"])
        check(tag + "dialogs", r["dialogs"]["created"], truth["calls"])
        check(tag + "completed", r["dialogs"]["finished"].get("completed", 0), truth["completed"])
        check(tag + "failed", r["dialogs"]["finished"].get("failed", 0), truth["failed"])
        check(tag + "cancelled", r["dialogs"]["finished"].get("cancelled", 0), truth["cancelled"])
        check(tag + "streams", r["streams"]["started"], truth["streams"])
        check(tag + "RTP packets", r["streams"]["rtp_packets"], truth["rtp_packets"])
        check(tag + "lost packets", r["streams"]["lost_packets"], truth["rtp_lost"])
        check(tag + "Q.850 cause 17 (the 486s)", r["dialogs"]["q850_causes"].get("17", 0), truth["failed"])
    for section in ("capture", "sip", "dialogs", "transactions", "streams"):
        check(f"1 and 2 shards agree on {section}", reports[2][section], reports[1][section])

    # What the tables held at the end of the input, before the end of the run lets them go: media
    # of less than a second (the figures are refreshed once a second of packet time otherwise),
    # every stream still in the table when the capture ends.
    short = os.path.join(work, "short.pcap")
    short_truth = json.loads(subprocess.run(
        [CORPUS, short, "--no-sip", "--calls", "200", "--media-seconds", "0.2", "--interval-us", "500",
         "--capture-from-ms", "500"], stdout=subprocess.PIPE, check=True).stdout)
    for cores in (1, 2):
        rc, r, _ = run_pcap([short], cores)
        tables = r["run"]["table_bytes"]
        check(f"[{cores} core(s)] the report names the four tables", sorted(tables),
              ["dialogs", "duplicates", "streams", "transactions"])
        check(f"[{cores} core(s)] the stream table held at least 100 bytes a stream ({tables['streams']})",
              tables["streams"] >= 100 * short_truth["streams"], True)
        check(f"[{cores} core(s)] no duplicate filter for a raw capture", tables["duplicates"], 0)
        dialogs = reports[cores]["run"]["table_bytes"]["dialogs"]
        check(f"[{cores} core(s)] the dialog table held at least 100 bytes a call ({dialogs})",
              dialogs >= 100 * truth["calls"], True)

    # A capture larger than what may stay resident: the mapping's pages are handed back behind
    # the readers, so the file's part of the peak resident set is a window of some MiB, not the
    # file (which stayed resident whole before). Measured against a tiny capture's run, which has
    # the program's own file pages too. Not under qemu-user (its RSS is the emulator's, and it need
    # not pass madvise on) nor AddressSanitizer (its quarantine moves the anonymous part).
    def file_pages_mib(path, cores):
        rc, r, _ = run_pcap([path], cores)
        return rc, (r["run"]["peak_rss_bytes"] - r["run"]["rss_anon_bytes"]) / 2**20

    with open(HEPD, "rb") as f:
        binary = f.read()
    # The qemu-user wrapper script tests/CMakeLists.txt writes; GCC links libasan, Clang links it in.
    measurable = binary[:4] == b"\x7fELF" and b"__asan_init" not in binary and b"libasan" not in binary
    big = os.path.join(work, "big.pcap")
    subprocess.run([CORPUS, big, "--calls", "2500"], stdout=subprocess.DEVNULL, check=True)
    tiny = os.path.join(FIXTURES, "sipp-10-calls-g711-via-kamailio.pcap")
    mib = os.path.getsize(big) >> 20
    for cores in (1, 2) if measurable else ():
        _, base = file_pages_mib(tiny, cores)
        rc, resident = file_pages_mib(big, cores)
        check(f"[{cores} core(s)] a {mib} MiB capture keeps at most 32 MiB more file pages resident than a "
              f"tiny one ({resident - base:.0f} MiB)", rc == 0 and resident - base <= 32, True)
    os.remove(big)

    # Real captures made with Kamailio and sipp (tests/fixtures/, part of the repository: a
    # missing one is a failure, not a skip).
    def fixture(name):
        path = os.path.join(FIXTURES, name)
        if not os.path.isfile(path):
            check(f"fixture {name} present in {FIXTURES} (see tests/fixtures/README.md)", False, True)
            return None
        return path

    for name in ("kamailio-siptrace-hep3-udp.pcap", "kamailio-siptrace-hep3-tcp.pcap",
                 "kamailio-siptrace-hep3-udp-core.pcap"):
        path = fixture(name)
        if path is None:
            continue
        rc, r, _ = run_pcap([path], 2)
        check(f"{name}: 5 calls", r["dialogs"]["created"], 5)
        check(f"{name}: all completed", r["dialogs"]["finished"].get("completed", 0), 5)
        check(f"{name}: HEP decode errors", r["capture"]["hep"]["decode_errors"], {})
    path = fixture("sipp-10-calls-g711-via-kamailio.pcap")
    if path is not None:
        rc, r, _ = run_pcap([path], 2)
        check("sipp capture: 10 calls", r["dialogs"]["created"], 10)
        check("sipp capture: all completed", r["dialogs"]["finished"].get("completed", 0), 10)
        check("sipp capture: RTP packets", r["streams"]["rtp_packets"], 880)

    # A file cut in the middle of a record, and a file that is not a capture.
    data = open(capture, "rb").read()
    cut = os.path.join(work, "cut.pcap")
    open(cut, "wb").write(data[: len(data) // 2 + 7])
    rc, r, err = run_pcap([cut], 2)
    check("truncated file: exit status", rc, 65)
    check("truncated file: error names the byte offset", "byte" in r.get("error", ""), True)
    check("truncated file: error names the file once", r.get("error", "").count(cut), 1)
    check("truncated file: stderr names the file once", err.count(cut), 1)
    check("truncated file: the frames before it are reported", r["capture"]["frames"] > truth["packets"] // 3, True)
    # Progress: on a terminal (a pseudo-terminal here), a status line redrawn in place and cleared
    # before the summary; through a pipe (above, every run_pcap), none of it.
    _, _, piped = run_pcap([capture], 1)
    check("progress: nothing on a pipe", "hepd pcap: file" in piped, False)
    leader, follower = pty.openpty()
    p = subprocess.Popen([HEPD, "pcap", capture, capture, "--cores", "1"], stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the process has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    check("progress: exit status on a terminal", p.wait(timeout=120), 0)
    text = shown.decode(errors="replace")
    check("progress: a status line on a terminal", "\r\x1b[Khepd pcap: file 1/2, " in text, True)
    check("progress: packets counted", " packets" in text, True)
    check("progress: the line cleared at the end", text.endswith("\r\x1b[K"), True)
    if failures:
        print(repr(text[-500:]))

    garbage = os.path.join(work, "garbage.pcap")
    open(garbage, "wb").write(b"this is not a capture file\n" * 100)
    rc, r, err = run_pcap([garbage], 1)
    check("garbage file: exit status", rc, 65)
    check("garbage file: says so", "not_a_capture" in r.get("error", "") or "not a" in r.get("error", ""), True)
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
