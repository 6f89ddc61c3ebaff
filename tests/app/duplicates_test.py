#!/usr/bin/env python3
"""Copies of one packet from two capture agents, counted once, through `hepd pcap` and through a
live daemon on loopback.

Offline: a generated capture is rewritten as two HEP agents (capture ids 101 and 202) that both
mirror every packet, the second 300 us after the first. Its report must equal the report of the
plain capture in every section about calls and media, with every copy in `duplicates`, for 1 and
2 shards; without the filter the copies show up as retransmissions and RTP duplicates. The same
capture with each raw packet twice (one agent on two interfaces) keeps its copies by default and
drops them with `duplicates.same_source` (and the network's own duplicates with them).

Live: the two agents send one call's SIP over HEP; hepd_duplicates_total counts the copies and no
retransmission is counted. Then eight agents whose clocks are an hour behind each mirror a call
that the right-clocked agent also sends: their shift must be measured from their datagrams'
arrival, not from the time the receive thread read them (up to a read window, 100 ms, later), or
their copies miss the 50 ms duplicate window. Each skewed agent first appears while the right one
keeps the receive thread in its read windows (100 datagrams/s).

  duplicates_test.py HEPD HEPD_CORPUS
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import Daemon, check, chunk, failures, hep3, now_us, sip  # noqa: E402

HEPD, CORPUS = sys.argv[1:3]
# hepd_runnable() in cmake/HepdHelpers.cmake: a cross build hands the tests a shell wrapper
# (qemu-user, which does not emulate the kernel's arrival stamps, SO_TIMESTAMPNS).
with open(HEPD, "rb") as f:
    EMULATED = f.read(2) == b"#!"
US = 1_000_000
MIRROR_DELAY_US = 300
SECTIONS = ("sip", "dialogs", "transactions", "rfc6076", "streams")


def read_pcap(path):
    """(time in us, Ethernet frame) of every record of a classic microsecond pcap."""
    data = open(path, "rb").read()
    assert struct.unpack_from("<I", data, 0)[0] == 0xa1b2c3d4, "not a little-endian microsecond pcap"
    records, at = [], 24
    while at + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, at)
        records.append((sec * US + usec, data[at + 16:at + 16 + incl]))
        at += 16 + incl
    return records


def write_pcap(path, records):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))  # Ethernet
        for t, frame in sorted(records, key=lambda r: r[0]):  # stable: equal times keep their order
            f.write(struct.pack("<IIII", t // US, t % US, len(frame), len(frame)) + frame)


def ipv4_checksum(header):
    total = sum(struct.unpack("!10H", header))
    while total > 0xffff:
        total = (total & 0xffff) + (total >> 16)
    return struct.pack("!H", ~total & 0xffff)


def udp_frame(src_ip, dst_ip, src_port, dst_port, payload):
    udp = struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload  # no UDP checksum
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, socket.inet_aton(src_ip),
                     socket.inet_aton(dst_ip))
    ip = ip[:10] + ipv4_checksum(ip) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + udp


def hep_of(t, frame, capture_id):
    """The UDP packet in `frame` as a HEPv3 message of agent `capture_id`; and its kind."""
    ip = frame[14:]
    header = (ip[0] & 0x0f) * 4
    src, dst = ip[12:16], ip[16:20]
    sport, dport = struct.unpack_from("!HH", ip, header)
    payload = ip[header + 8:]
    kind = "sip" if 5060 in (sport, dport) else "rtp"
    seconds, micros = divmod(t, US)
    body = b"".join([
        chunk(1, b"\x02"), chunk(2, b"\x11"), chunk(3, src), chunk(4, dst),
        chunk(7, struct.pack("!H", sport)), chunk(8, struct.pack("!H", dport)),
        chunk(9, struct.pack("!I", seconds)), chunk(10, struct.pack("!I", micros)),
        chunk(11, b"\x01" if kind == "sip" else b"\x04"), chunk(12, struct.pack("!I", capture_id)),
        chunk(15, payload),
    ])
    message = b"HEP3" + struct.pack("!H", 6 + len(body)) + body
    agent_ip = "10.99.0.1" if capture_id == 101 else "10.99.0.2"
    return udp_frame(agent_ip, "10.99.0.100", 40000, 9060, message), kind


def run_pcap(paths, cores, config=None, text=False):
    cmd = [HEPD, "pcap", *paths, "--cores", str(cores)]
    if config:
        cmd += ["--config", config]
    cmd += ["--report"] if text else ["--json", "-"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(f"hepd pcap {' '.join(cmd[2:])}: exit status", p.returncode, 0)
    if p.returncode != 0:
        print(p.stderr.decode())
    return p.stdout.decode() if text else json.loads(p.stdout)


def write_config(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def offline(work):
    plain = os.path.join(work, "plain.pcap")
    subprocess.run([CORPUS, plain, "--calls", "80", "--media-seconds", "1", "--loss", "2", "--duplicates", "2",
                    "--failed", "10", "--cancelled", "10", "--interval-us", "5000"], stdout=subprocess.PIPE,
                   check=True)
    records = read_pcap(plain)
    mirrored, counts = [], {"sip": 0, "rtp": 0}
    for t, frame in records:
        first, kind = hep_of(t, frame, 101)
        second, _ = hep_of(t + MIRROR_DELAY_US, frame, 202)
        mirrored += [(t, first), (t + MIRROR_DELAY_US, second)]
        counts[kind] += 1
    two_agents = os.path.join(work, "two-agents.pcap")
    write_pcap(two_agents, mirrored)
    off = write_config(os.path.join(work, "off.yaml"), "duplicates:\n  window: 0\n")
    same_source = write_config(os.path.join(work, "same-source.yaml"), "duplicates:\n  same_source: true\n")

    reference = run_pcap([plain], 1)
    check("plain capture: no duplicates", reference["duplicates"], {"by_kind": {}, "evictions": 0})
    check("plain capture: no retransmissions", reference["sip"]["retransmissions"], {})
    check("plain capture: the network's RTP duplicates", reference["streams"]["duplicate_packets"] > 0, True)
    for cores in (1, 2):
        r = run_pcap([two_agents], cores)
        for section in SECTIONS:
            check(f"two agents, {cores} shard(s): {section} as with one agent", r[section], reference[section])
        check(f"two agents, {cores} shard(s): every second copy dropped", r["duplicates"],
              {"by_kind": counts, "evictions": 0})
    r = run_pcap([two_agents], 2, off)
    check("two agents, window 0: nothing dropped", r["duplicates"]["by_kind"], {})
    check("two agents, window 0: the copies are retransmissions", r["sip"]["retransmissions"] != {}, True)
    check("two agents, window 0: and RTP duplicates", r["streams"]["duplicate_packets"] >
          reference["streams"]["duplicate_packets"], True)
    text = run_pcap([two_agents], 2, text=True)
    check("text report: the duplicates line", f"  duplicates (copies from another agent, dropped): "
          f"rtp {counts['rtp']}, sip {counts['sip']}, evicted early 0\n" in text, True)

    # One agent on two interfaces, from a capture without the network's duplicates (same_source
    # would take those for copies too, and the RTP figures would change with them).
    clean = os.path.join(work, "clean.pcap")
    subprocess.run([CORPUS, clean, "--calls", "40", "--media-seconds", "1", "--loss", "2", "--interval-us", "5000"],
                   stdout=subprocess.PIPE, check=True)
    records = read_pcap(clean)
    twice = os.path.join(work, "two-interfaces.pcap")
    write_pcap(twice, [r for t, frame in records for r in ((t, frame), (t + MIRROR_DELAY_US, frame))])
    reference = run_pcap([clean], 1)
    r = run_pcap([twice], 2)
    check("one agent on two interfaces: kept by default", r["duplicates"]["by_kind"], {})
    check("one agent on two interfaces: the copies are retransmissions", r["sip"]["retransmissions"] != {}, True)
    r = run_pcap([twice], 2, same_source)
    for section in SECTIONS:
        check(f"one agent on two interfaces, same_source: {section} as with one copy", r[section],
              reference[section])
    check("one agent on two interfaces, same_source: every second copy dropped",
          sum(r["duplicates"]["by_kind"].values()), len(records))


def live(work):
    config = write_config(os.path.join(work, "live.yaml"), "log_level: info\n")
    daemon = Daemon(HEPD, work, config, time.monotonic() + 60)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t = now_us()
        messages = ["INVITE", "180", "200", "ACK", "BYE", "200BYE"]
        for i, kind in enumerate(messages):
            text = sip(kind, "mirrored-call@test")
            forward = kind in ("INVITE", "ACK", "BYE")
            src, dst = (("10.0.0.1", 5060), ("10.0.0.2", 5060)) if forward else (("10.0.0.2", 5060),
                                                                                ("10.0.0.1", 5060))
            at = t + i * 20_000
            s.sendto(hep3(text, at, 101, src, dst), ("127.0.0.1", daemon.hep_port))
            s.sendto(hep3(text, at + MIRROR_DELAY_US, 202, src, dst), ("127.0.0.1", daemon.hep_port))
        s.close()
        n = len(messages)
        got = daemon.wait_metric(n, "hepd_duplicates_total", kind="sip")
        check("live: every second agent's copy counted", got, n)
        x = daemon.scrape()
        check("live: HEP packets accepted (both agents)", x.get("hepd_hep_packets_total", payload_type="sip"), 2 * n)
        check("live: datagrams the tables processed", x.get("hepd_shard_datagrams_total", kind="sip"), n)
        check("live: no retransmissions", x.get("hepd_sip_retransmissions_total"), 0)
        check("live: one dialog", x.get("hepd_dialogs_created_total"), 1)
        check("live: no filter evictions", x.get("hepd_table_evictions_total", table="duplicates"), 0)
    finally:
        check("live: clean exit", daemon.stop(), 0)


def live_skewed(work):
    config = write_config(os.path.join(work, "skewed.yaml"), "log_level: info\n")
    daemon = Daemon(HEPD, work, config, time.monotonic() + 60)
    skewed = list(range(301, 309))
    hour = 3600 * US
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        to = ("127.0.0.1", daemon.hep_port)
        # Each skewed agent's first datagram at its own phase of the read windows, a second one
        # 300 ms later; the right-clocked agent sends every 10 ms throughout.
        start = time.monotonic()
        events = sorted([(0.5 + i * 0.037, a, "first") for i, a in enumerate(skewed)] +
                        [(0.8 + i * 0.037, a, "second") for i, a in enumerate(skewed)])
        n = 0
        while events:
            elapsed = time.monotonic() - start
            while events and events[0][0] <= elapsed:
                _, agent, which = events.pop(0)
                s.sendto(hep3(sip("OPTIONS", f"alone-{which}-{agent}@test"), now_us() - hour, agent), to)
            s.sendto(hep3(sip("OPTIONS", f"steady-{n}@test"), now_us(), 101), to)
            n += 1
            time.sleep(0.01)
        messages = ["INVITE", "180", "200", "ACK", "BYE", "200BYE"]
        for agent in skewed:
            for kind in messages:
                text = sip(kind, f"skewed-mirror-{agent}@test")
                at = now_us()
                s.sendto(hep3(text, at, 101), to)
                s.sendto(hep3(text, at + MIRROR_DELAY_US - hour, agent), to)
                time.sleep(0.002)
        s.close()
        want = len(skewed) * len(messages)
        got = daemon.wait_metric(want, "hepd_duplicates_total", kind="sip")
        check("live, skewed agents: every mirrored copy counted as a duplicate", got, want)
        x = daemon.scrape()
        check("live, skewed agents: no retransmissions", x.get("hepd_sip_retransmissions_total"), 0)
        check("live, skewed agents: each offset counted once", x.get("hepd_hep_clock_offset_exceeded_total"),
              len(skewed))
        check("live, skewed agents: no clock steps", x.get("hepd_hep_clock_steps_total"), 0)
    finally:
        check("live, skewed agents: clean exit", daemon.stop(), 0)


work = tempfile.mkdtemp(prefix="hepd-duplicates-test.")
try:
    offline(work)
    live(work)
    if EMULATED:
        print("skipped under qemu-user: live, skewed agents (no arrival stamps; the offsets keep the read delay)")
    else:
        live_skewed(work)
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
