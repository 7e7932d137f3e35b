#!/usr/bin/env bash
# Install the Debian packages needed to build and test mroce. Idempotent:
# does nothing (and never touches apt) when everything is already installed.
# Append packages to PACKAGES below; MROCE_EXTRA_PACKAGES adds more ad hoc.
set -euo pipefail

PACKAGES="build-essential cmake pkg-config libcmocka-dev clang-format libpcap-dev tshark clang libclang-rt-14-dev gnuplot-nox nftables iproute2 iperf3 dpdk-dev libdpdk-dev jq libssl-dev libipsec-mb-dev python3 libjansson-dev perftest ibverbs-utils libibumad3 libibverbs-dev openmpi-bin libopenmpi-dev"

want="$PACKAGES ${MROCE_EXTRA_PACKAGES:-}"

missing=()
for pkg in $want; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
        exit 1
    fi
fi

echo "install-deps: installing: ${missing[*]}"
"${SUDO[@]+"${SUDO[@]}"}" apt-get update
"${SUDO[@]+"${SUDO[@]}"}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
echo "install-deps: done"
