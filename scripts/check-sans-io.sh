#!/usr/bin/env bash
# Sans-I/O guard: code under src/engine, src/wire, src/roce and src/device
# (the PD/MR/CQ objects both engines share) may include
# only these libc headers and project-local "quoted" headers (which must
# exist next to the includer, under src/ or under include/).
# Usage: scripts/check-sans-io.sh [repo-root]
set -euo pipefail

ALLOWED_SYSTEM="stdint.h stddef.h string.h stdbool.h limits.h"
CHECKED_DIRS="src/engine src/wire src/roce src/device"

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"
root_abs="$(pwd -P)"

bad=0
nfiles=0

is_allowed_system() {
    local h
    # The project's own public API header (include/mroce/) is part of it.
    [[ "$1" == mroce/* && -f "include/$1" ]] && return 0
    for h in $ALLOWED_SYSTEM; do
        [[ "$1" == "$h" ]] && return 0
    done
    return 1
}

# A quoted header counts as project-local if it resolves to a file inside
# the repo: next to the includer, under src/ or under include/.
is_project_header() {
    local includer_dir="$1" name="$2" base cand
    [[ "$name" != /* ]] || return 1
    for base in "$includer_dir" src include; do
        cand="$(realpath -m -- "$base/$name")"
        [[ "$cand" == "$root_abs"/* && -f "$cand" ]] && return 0
    done
    return 1
}

report() {
    printf '%s:%s: %s   <- %s\n' "$1" "$2" "$3" "$4"
    bad=$((bad + 1))
}

dirs=()
for d in $CHECKED_DIRS; do
    [[ -d "$d" ]] && dirs+=("$d")
done

files=()
if ((${#dirs[@]})); then
    while IFS= read -r -d '' f; do
        files+=("$f")
    done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
fi

re_angle='^[[:space:]]*#[[:space:]]*include[[:space:]]*<([^>]*)>'
re_quote='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
re_any='^[[:space:]]*#[[:space:]]*include'

for f in "${files[@]+"${files[@]}"}"; do
    nfiles=$((nfiles + 1))
    lineno=0
    while IFS= read -r line || [[ -n "$line" ]]; do
        lineno=$((lineno + 1))
        [[ "$line" =~ $re_any ]] || continue
        if [[ "$line" =~ $re_angle ]]; then
            is_allowed_system "${BASH_REMATCH[1]}" ||
                report "$f" "$lineno" "$line" "system header not allowed"
        elif [[ "$line" =~ $re_quote ]]; then
            is_project_header "$(dirname "$f")" "${BASH_REMATCH[1]}" ||
                report "$f" "$lineno" "$line" "not a project-local header"
        else
            report "$f" "$lineno" "$line" "unrecognised include form"
        fi
    done < "$f"
done

if ((bad)); then
    echo "check-sans-io: $bad forbidden include(s) in $nfiles file(s) under $CHECKED_DIRS"
    echo "check-sans-io: allowed: <${ALLOWED_SYSTEM// /> <}> and project \"headers\""
    exit 1
fi
echo "check-sans-io: OK ($nfiles file(s) under $CHECKED_DIRS)"
