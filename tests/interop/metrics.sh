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
