#!/bin/sh
# config/prometheus/hepd-rules.yml (the RFC 6076 ratios) against promtool: the rules load, their
# unit tests pass, and every recording rule has a test. promtool is a build dependency here
# (Debian: prometheus), so its absence fails the test rather than skipping it.
#   prometheus_rules_test.sh SOURCE_DIR [PROMTOOL]
set -u
dir="$1/config/prometheus"
tool="${2:-$(command -v promtool || true)}"
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
    echo "FAIL: promtool not found (install the Debian package 'prometheus')" >&2
    exit 1
fi
failed=0
"$tool" check rules "$dir/hepd-rules.yml" || failed=1
(cd "$dir" && "$tool" test rules hepd-rules.test.yml) || failed=1
for name in $(sed -n 's/^ *- record: *//p' "$dir/hepd-rules.yml"); do
    if ! grep -q "expr: .*$name" "$dir/hepd-rules.test.yml"; then
        echo "FAIL: recording rule $name has no test in hepd-rules.test.yml" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] && echo "ok: hepd-rules.yml checked and tested"
exit "$failed"
