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

# start_hepd LOG ARGS...: runs "$HEPD" ARGS... with HEP on 127.0.0.1:$HEP_PORT and metrics on
# 127.0.0.1:$METRICS_PORT in the background (HEPD_PID, also added to PIDS), its output in LOG, and
# returns once the metrics answer. hepd exits with 69 when it cannot listen: a port free when
# free_ports chose it was taken since (another test's connection, seen in CI). It then starts
# again on two new ports, at most 5 times, first calling hepd_ports_changed if the script defines
# it (to rewrite what names the ports). Any other exit at start-up, or no answer within 20 s,
# fails the test at once with the end of LOG, instead of a timeout later that says nothing.
start_hepd() {
    local log=$1 rc
    shift
    for _ in 1 2 3 4 5; do
        "$HEPD" "$@" --hep-listen "127.0.0.1:$HEP_PORT" --metrics-listen "127.0.0.1:$METRICS_PORT" >"$log" 2>&1 &
        HEPD_PID=$!
        PIDS+=("$HEPD_PID")
        for _ in $(seq 200); do
            curl -sf -o /dev/null "http://127.0.0.1:$METRICS_PORT/metrics" && return 0
            kill -0 "$HEPD_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$HEPD_PID" 2>/dev/null; then
            echo "BAD hepd's metrics did not answer within 20 s"
            tail -30 "$log"
            exit 1
        fi
        rc=0
        wait "$HEPD_PID" || rc=$?
        if [ "$rc" -ne 69 ]; then
            echo "BAD hepd exited at start-up (status $rc)"
            tail -30 "$log"
            exit 1
        fi
        echo "hepd could not listen ($(grep -m1 'cannot listen' "$log" || true)): again on new ports"
        read -r HEP_PORT METRICS_PORT < <(free_ports 2)
        if declare -F hepd_ports_changed >/dev/null; then hepd_ports_changed; fi
    done
    echo "BAD hepd could not listen in 5 attempts"
    tail -30 "$log"
    exit 1
}
