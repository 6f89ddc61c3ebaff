#!/usr/bin/env python3
"""`hepd pcap --cores N`: the report must not depend on the shard count, nor on how far the shards
(each reading the capture and keeping its own, media waiting for the others' SIP) happen to be
from each other. Checked on a capture built from every real fixture (HEP over UDP and TCP, SIP over
TCP and WebSocket, IP fragments, IP-in-IP, sipp's calls with media), copied several times with
times that go back between the copies; on several files read in one run; on the same capture cut
short in the middle of a record (the same error, after the same frames). 2 and 3 shards run
repeatedly: a result that hangs on timing shows. And memory: on a SIP-only capture (tcpdump port
5060) the SDP bindings that cross between two shards, which wait in input order for the media
after them, are applied as the shards read on (they were kept for the whole run: ~700 bytes an
offer), and a shard whose peer falls behind waits for it beyond 4,096 of them.

  pcap_shards_test.py HEPD FIXTURE_FILE...
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402

HEPD = sys.argv[1]
FIXTURES = sys.argv[2:]
REPEATS = 6  # about 2,000 frames a round


def records(path):
    """The global header and the records (header, data) of a little-endian classic pcap."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic == 0xA1B2C3D4, f"{path}: not a little-endian microsecond pcap"
    out, at = [], 24
    while at + 16 <= len(data):
        caplen = struct.unpack("<I", data[at + 8:at + 12])[0]
        out.append((data[at:at + 16], data[at + 16:at + 16 + caplen]))
        at += 16 + caplen
    return data[:24], out


def mixed_capture(path):
    """Every fixture REPEATS times, each copy in a time window of its own (ten minutes apart, so
    that the calls of one copy are over before the next begins)."""
    header, rounds = None, []
    for fixture in FIXTURES:
        h, recs = records(fixture)
        header = header or h
        rounds.append(recs)
    frames = 0
    with open(path, "wb") as out:
        out.write(header)
        window = 0
        for _ in range(REPEATS):
            for recs in rounds:
                first = struct.unpack("<I", recs[0][0][:4])[0] if recs else 0
                for rec_header, payload in recs:
                    secs, usecs, caplen, origlen = struct.unpack("<IIII", rec_header)
                    secs = secs - first + 1_700_000_000 + window * 600
                    out.write(struct.pack("<IIII", secs, usecs, caplen, origlen) + payload)
                    frames += 1
                window += 1
    return frames


def run(paths, cores):
    with tempfile.TemporaryDirectory() as work:
        records = os.path.join(work, "records.jsonl")
        p = subprocess.run([HEPD, "pcap", *paths, "--cores", str(cores), "--json", "-", "--records", records],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        # Every call with its streams (each stream's Call-ID is where a binding landed); the shards
        # write them as their calls end, so in an order of their own.
        lines = sorted(open(records).read().splitlines()) if os.path.exists(records) else []
    report = json.loads(p.stdout) if p.stdout else {}
    # What may differ with the shard count: timings, memory, the shard list.
    kept = {k: v for k, v in report.items() if k not in ("run", "shards")}
    kept["call records"] = lines
    error = p.stderr.decode(errors="replace").strip().splitlines()
    return p.returncode, kept, [line for line in error if line.startswith("hepd:")]


def same_for_all_cores(label, paths):
    rc1, one, err1 = run(paths, 1)
    check(f"{label}: one shard gives a report", bool(one), True)
    for cores in (2, 2, 2, 3, 3):  # repeated: a result that hangs on timing shows
        rc, report, err = run(paths, cores)
        check(f"{label}: exit status with {cores} shards", rc, rc1)
        check(f"{label}: error with {cores} shards", err, err1)
        for section in sorted(set(one) | set(report)):
            check(f"{label}: {section} with {cores} shards", report.get(section), one.get(section))
    return one


def sip_only_capture(path, invites):
    """`invites` unanswered INVITEs with SDP offers, every one to its own media address."""
    def ipv4_udp(payload):
        u = struct.pack(">HHHH", 5060, 5060, 8 + len(payload), 0) + payload
        h = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 0, 0, 64, 17, 0, socket.inet_aton("10.0.0.1"),
                        socket.inet_aton("10.0.0.2"))
        return b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00" + h + u
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(invites):
            media = f"10.3.{i // 250 % 250}.{i % 250 + 1}"
            sdp = (f"v=0\r\no=- {i} 1 IN IP4 {media}\r\ns=-\r\nc=IN IP4 {media}\r\nt=0 0\r\n"
                   f"m=audio {10000 + 2 * (i % 20000)} RTP/AVP 0\r\n")
            sip = (f"INVITE sip:bob@10.0.0.2 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-{i}\r\n"
                   f"From: <sip:alice@a>;tag=f{i}\r\nTo: <sip:bob@b>\r\nCall-ID: sip-only-{i}@test\r\n"
                   f"CSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: {len(sdp)}\r\n\r\n{sdp}")
            frame = ipv4_udp(sip.encode())
            t = 1_700_000_000_000_000 + i * 100
            f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), len(frame)) + frame)


def sip_only_memory(work):
    config = os.path.join(work, "small.yaml")
    with open(config, "w") as f:
        f.write("tables:\n  max_dialogs: 1000\n  max_pending_media: 1000\n  max_transactions: 1000\n")
    invites = 60_000
    capture = os.path.join(work, "sip-only.pcap")
    sip_only_capture(capture, invites)
    for cores in (2, 3):
        p = subprocess.run([HEPD, "pcap", capture, "--cores", str(cores), "--config", config, "--json", "-"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300)
        run = json.loads(p.stdout)["run"] if p.returncode == 0 else {}
        peak = run.get("bindings_waiting_peak")
        print(f"SIP-only capture, {invites} offers, {cores} shards: at most {peak} bindings waiting, "
              f"peak RSS {run.get('peak_rss_bytes', 0) >> 20} MiB", flush=True)
        # 4,096 and what comes in before the next look (64 datagrams read, a link's batches).
        check(f"SIP-only capture, {cores} shards: bindings waiting stay bounded", peak is not None and peak <= 8192,
              True)


def main():
    with tempfile.TemporaryDirectory() as work:
        sip_only_memory(work)
        mixed = os.path.join(work, "mixed.pcap")
        frames = mixed_capture(mixed)
        check("the mixed capture has its frames", frames > 10000, True)
        report = same_for_all_cores("mixed capture", [mixed])
        check("the mixed capture has TCP streams", report["capture"]["packets_by_class"].get("hep_tcp", 0) > 0, True)
        # Times go back between the files (and between the copies in the mixed capture): each
        # side's timers must still run as a single reader's would (Worker::advance_sip/_media).
        same_for_all_cores("several files", [mixed, *FIXTURES, mixed])
        # Cut in the middle of a record: a truncated_record error there.
        cut = os.path.join(work, "cut.pcap")
        with open(mixed, "rb") as f:
            data = f.read()
        at, n = 24, 0
        while n < frames // 2:
            at += 16 + struct.unpack("<I", data[at + 8:at + 12])[0]
            n += 1
        with open(cut, "wb") as f:
            f.write(data[:at + 20])
        rc, _, err = run([cut], 2)
        check("a capture cut short ends with an error", rc != 0 and any("truncated_record" in e for e in err), True)
        same_for_all_cores("capture cut short", [cut])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
