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
