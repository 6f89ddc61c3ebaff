# Free loopback ports for the interop tests (sourced).

# free_ports N: N distinct ports, each free for UDP and TCP (hepd takes its HEP port on both),
# all held open together while they are chosen so that none is handed out twice.
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
held, ports = [], []
while len(ports) < int(sys.argv[1]):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        t.bind(("127.0.0.1", u.getsockname()[1]))
    except OSError:
        held.append(u)
        continue
    held += [u, t]
    ports.append(u.getsockname()[1])
print(*ports)
PY
}

# free_udp_range COUNT: the first of COUNT consecutive ports free for UDP, below the ephemeral
# range so that no client socket takes one meanwhile. A test asks once for all the media ports it
# needs and splits the range: ranges picked one at a time can overlap (they are not held).
free_udp_range() {
    python3 - "$1" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(20000, 32000 - count, 2)
    socks = []
    try:
        for p in range(base, base + count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", p))
        print(base)
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit("no free UDP port range")
PY
}
