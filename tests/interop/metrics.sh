# Reading hepd's metrics endpoint from the interop tests (sourced; METRICS_PORT must be set).

# family_sum FAMILY [LABEL=VALUE...]: the sum of a family's samples with those labels, scraped now.
family_sum() {
    python3 - "$METRICS_PORT" "$@" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
family, wanted = sys.argv[2], [f'{kv.split("=", 1)[0]}="{kv.split("=", 1)[1]}"' for kv in sys.argv[3:]]
print(int(sum(float(line.split()[-1]) for line in text.splitlines()
              if line.startswith((family + "{", family + " ")) and all(w in line for w in wanted))))
PY
}

# wait_for_metrics PID LOG: returns once hepd's metrics endpoint answers (20 s at most). When hepd
# (PID) exits first, or the endpoint never answers, the end of hepd's LOG is shown and the test
# fails at once; otherwise it would only time out later, saying nothing of why.
wait_for_metrics() {
    local pid=$1 log=$2
    for _ in $(seq 200); do
        curl -sf -o /dev/null "http://127.0.0.1:$METRICS_PORT/metrics" && return 0
        kill -0 "$pid" 2>/dev/null || { echo "BAD hepd exited at start-up"; tail -30 "$log"; exit 1; }
        sleep 0.1
    done
    echo "BAD hepd's metrics did not answer within 20 s"
    tail -30 "$log"
    exit 1
}
