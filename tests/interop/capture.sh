# Recording what crosses loopback with tcpdump, for the interop tests that read it back with
# `hepd pcap` (sourced; WORK must be set, stop_tcpdump belongs in the caller's cleanup).
TCPDUMP_PID=""

# start_tcpdump FILE FILTER [TCPDUMP-ARGS...]: records lo into FILE and returns once tcpdump
# listens; exits 77 (skipped) where capturing is not allowed. -U writes each packet as it comes
# and --immediate-mode hands it over at once: without them the kernel delivers whole buffer
# blocks (up to a second late) and the SIGINT at the end loses the last one. As root, tcpdump
# drops to its own user before it creates FILE (in a private folder): it keeps root here.
start_tcpdump() {
    local file=$1 filter=$2
    shift 2
    local user=()
    [ "$(id -u)" -ne 0 ] || user=(-Z root)
    tcpdump -i lo -n -U --immediate-mode "${user[@]}" "$@" -w "$file" "$filter" 2>"$WORK/tcpdump.log" &
    TCPDUMP_PID=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$WORK/tcpdump.log" && return 0
        if ! kill -0 "$TCPDUMP_PID" 2>/dev/null; then
            cat "$WORK/tcpdump.log"
            if grep -qi "permission\|not permitted" "$WORK/tcpdump.log"; then echo "tcpdump cannot capture here: skipped"; exit 77; fi
            echo "BAD tcpdump did not start"
            exit 1
        fi
        sleep 0.1
    done
    echo "BAD tcpdump not listening after 10 s"
    exit 1
}

# SIGINT makes tcpdump flush and close the file; then wait for it.
stop_tcpdump() {
    [ -n "$TCPDUMP_PID" ] || return 0
    kill -INT "$TCPDUMP_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$TCPDUMP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$TCPDUMP_PID" 2>/dev/null || true
    wait "$TCPDUMP_PID" 2>/dev/null || true
    TCPDUMP_PID=""
}

# After stop_tcpdump: packets the kernel dropped from the recording (a busy machine), 0 if none.
tcpdump_drops() {
    local n
    n=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$WORK/tcpdump.log")
    echo "${n:-0}"
}
