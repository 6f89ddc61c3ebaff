#!/usr/bin/env bash
# Installs the package of this machine's architecture with apt, checks what an operator relies on,
# purges it and checks that nothing is left. Run by `packaging/dev test` (as root, on the CI machine).
#   packaging/deb_install_test.sh build-deb/hepd_<version>_<arch>.deb
set -euo pipefail

deb=$(realpath "${1:?usage: $0 hepd_VERSION_ARCH.deb}")
fail() { echo "deb install test: FAILED: $*" >&2; exit 1; }
installed() { dpkg-query -W -f='${Status}' hepd 2>/dev/null | grep -q 'install ok installed'; }

if installed; then
    echo "deb install test: skipped, hepd is already installed here (it would be removed)"
    exit 0
fi
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
trap '$SUDO apt-get purge -y -qq hepd >/dev/null 2>&1 || true' EXIT

$SUDO apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
installed || fail "dpkg does not list hepd as installed"

/usr/sbin/hepd --version
/usr/sbin/hepd check-config /etc/hepd/hepd.yaml || fail "check-config rejects the shipped configuration"
dpkg-query -W -f='${Conffiles}\n' hepd | grep -q '^ /etc/hepd/hepd.yaml ' || fail "hepd.yaml is not a conffile"
systemd-analyze verify /lib/systemd/system/hepd.service || fail "systemd-analyze verify"
[[ -L /etc/systemd/system/multi-user.target.wants/hepd.service ]] || fail "the unit is not enabled"
man -w hepd >/dev/null || fail "no man page"
for doc in README.md METRICS.md SENDERS.md copyright; do
    [[ -f /usr/share/doc/hepd/$doc ]] || fail "/usr/share/doc/hepd/$doc missing"
done
exposure=$(systemd-analyze security --offline=yes /lib/systemd/system/hepd.service 2>/dev/null |
    sed -n 's/.*Overall exposure level for hepd.service: \([0-9.]*\).*/\1/p')
echo "systemd-analyze security: exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' || fail "exposure $exposure is over 2.0"

# What the service leaves at run time (DynamicUser: /var/lib/hepd links to /var/lib/private/hepd).
$SUDO mkdir -p /var/lib/private/hepd
$SUDO touch /var/lib/private/hepd/hepd.snapshot
$SUDO ln -sfn private/hepd /var/lib/hepd

$SUDO apt-get purge -y -qq hepd >/dev/null
trap - EXIT
installed && fail "hepd still installed after purge"
for path in /usr/sbin/hepd /etc/hepd /lib/systemd/system/hepd.service /usr/share/doc/hepd /usr/share/hepd \
    /usr/share/man/man8/hepd.8.gz /var/lib/hepd /var/lib/private/hepd \
    /etc/systemd/system/multi-user.target.wants/hepd.service; do
    [[ -e "$path" || -L "$path" ]] && fail "$path is left after purge"
done
echo "deb install test: installed, checked and purged $(basename "$deb") cleanly"
