#!/usr/bin/env bash
# tests/net/dpdk_memif.sh with zero-copy transmit off (mroce-dpdk-perf
# --no-zc): the copying path still carries every operation, and no frame
# is sent zero-copy.
exec bash "$(dirname "$0")/dpdk_memif.sh" --no-zc
