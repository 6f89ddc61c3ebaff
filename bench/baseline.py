"""bench/baseline.json: where the benchmarks record their figures, one entry per benchmark."""
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline.json")


def store(key, entry):
    """Replaces the entry `key` with `entry`, keeping its hand-written "notes" (history of earlier
    runs) unless `entry` brings its own."""
    baseline = json.load(open(PATH)) if os.path.exists(PATH) else {}
    notes = baseline.get(key, {}).get("notes") if isinstance(baseline.get(key), dict) else None
    if notes is not None and "notes" not in entry:
        entry = {**entry, "notes": notes}
    baseline[key] = entry
    with open(PATH, "w") as f:
        json.dump(baseline, f, indent=2, ensure_ascii=False)
        f.write("\n")
