#!/usr/bin/env bash
# Debian's unmodified perftest binaries over mroce (build/bin/mroce-run,
# the drop-in libibverbs.so.1): ib_write_bw, ib_read_bw, ib_send_bw,
# ib_write_lat, ib_read_lat, ib_send_lat, each as a server and a client
# process on this host, at a few sizes with a small -n. Each run is
# bounded in time, both must exit 0, and the client's result line must
# parse (a BW or latency figure for the size and iterations asked).
# In the ASan build the library is the sanitized one; mroce-run preloads
# the sanitizer runtimes. Needs no root; SKIP when perftest is missing.
set -u
B=${MROCE_BUILD_DIR:-build}
RUN=$B/bin/mroce-run
[ -x "$RUN" ] || { echo "SKIP: no $RUN"; exit 77; }
command -v ib_write_bw >/dev/null || {
    echo "SKIP: perftest is not installed"
    exit 77
}
TMP=$(mktemp -d /tmp/mroce-verbs.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    for f in "$TMP"/*.log; do
        [ -e "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }
    done
    exit 1
}
PORT=$((21000 + ($$ % 4000)))
SRC=${MROCE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}

# The sanitized library (the ASan build): memory errors abort the program
# (abort_on_error, exit 134); leak reports go to files, and a leak fails
# the test only if the library allocated it. perftest's own allocations
# it never frees (and the device list it never gives back, which
# ibv_get_device_list allocates for it) are perftest's business.
ASAN=0
case "$(ldd "$B/lib/libibverbs.so.1" 2>/dev/null)" in
*libasan*) ASAN=1 ;;
esac
if [ $ASAN = 1 ]; then
    export LSAN_OPTIONS="exitcode=0:log_path=$TMP/lsan"
fi
our_leaks() {
    [ $ASAN = 1 ] || return 0
    local f bad=0
    for f in "$TMP"/lsan.*; do
        [ -e "$f" ] || continue
        awk -v src="$SRC/src/" '
            /leak of/ { if (blk != "") check(); blk = $0; next }
            /^$/ { if (blk != "") check(); blk = ""; next }
            { if (blk != "") blk = blk "\n" $0 }
            function check() {
                if (index(blk, src) && !index(blk, "ibv_get_device_list"))
                    { print blk; bad = 1 }
            }
            END { if (blk != "") check(); exit bad }' "$f" || bad=1
        [ $bad = 1 ] && { cat "$f"; return 1; }
        rm -f "$f"
    done
    return 0
}

# Waits until the server listens on its TCP port (perftest's client does
# not retry a refused connection).
listening() {
    for _ in $(seq 1 200); do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
        sleep 0.05
    done
    return 1
}

# The result line: "<size> <iters> <numbers...>" (iters: -n times -q).
parse() { # log size iters
    awk -v s="$2" -v n="$3" '$1 == s && $2 % n == 0 && $2 > 0 && NF >= 5 &&
        $3 ~ /^[0-9.]+$/ && $4 ~ /^[0-9.]+$/ { ok = 1; print }
        END { exit !ok }' "$1"
}

one() { # test size iters [extra args]
    local t=$1 s=$2 n=$3
    shift 3
    PORT=$((PORT + 1))
    timeout 60 "$RUN" "$t" -s "$s" -n "$n" -p $PORT "$@" \
        >"$TMP/srv.log" 2>&1 &
    local spid=$!
    PIDS+=($spid)
    listening $PORT || fail "$t -s $s: the server does not listen"
    timeout 60 "$RUN" "$t" -s "$s" -n "$n" -p $PORT "$@" 127.0.0.1 \
        >"$TMP/cli.log" 2>&1 || fail "$t -s $s: client exit $?"
    wait $spid || fail "$t -s $s: server exit $?"
    our_leaks || fail "$t -s $s: the library leaked"
    line=$(parse "$TMP/cli.log" "$s" "$n") ||
        fail "$t -s $s: no result line"
    echo "$t: $line"
}

for s in 8 4096 1048576; do
    n=100
    [ "$s" -ge 1048576 ] && n=20
    one ib_write_bw $s $n
    one ib_read_bw $s $n
    one ib_send_bw $s $n
done
for s in 8 4096 65536; do
    one ib_write_lat $s 100
    one ib_read_lat $s 100
    one ib_send_lat $s 100
done
# completion events in a bandwidth test (-e) and several QPs (-q)
one ib_send_bw 65536 100 -e
one ib_write_bw 65536 100 -q 4
echo PASS
