#!/usr/bin/env bash
# Proves scripts/spec-rules.py catches what it claims to: runs it on the
# real tree (must pass), then on broken copies of docs/spec.md and a fake
# source tree, each of which must fail with the expected message.
# Usage: scripts/spec-rules-test.sh [repo-root]
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
checker="$root/scripts/spec-rules.py"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0

python3 "$checker" --root "$root" >/dev/null || {
    echo "FAIL: the real spec does not pass"; exit 1; }

# A fresh fake tree: the real spec, an empty source tree.
fresh() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/docs" "$tmp/t/src"
    cp "$root/docs/spec.md" "$tmp/t/docs/spec.md"
}

# expect NAME PATTERN: the checker must fail on $tmp/t and say PATTERN.
expect() {
    local out
    if out="$(python3 "$checker" --root "$tmp/t" 2>&1)"; then
        echo "FAIL: $1: checker passed a broken spec"; fail=1
    elif ! grep -q -- "$2" <<<"$out"; then
        echo "FAIL: $1: expected '$2' in:"; echo "$out"; fail=1
    else
        echo "ok: $1"
    fi
}

edit() { python3 -c "$1" "$tmp/t/docs/spec.md"; }

fresh
python3 "$checker" --root "$tmp/t" >/dev/null || {
    echo "FAIL: an unmodified copy does not pass"; exit 1; }
echo "ok: unmodified copy passes"

fresh
edit 'import sys; p=sys.argv[1]; s=open(p).read()
a=s.index("**R-ENC-1**"); b=s.index("\n\n", a)
open(p,"w").write(s[:a]+s[a:b].replace("MUST","must")+s[b:])'
expect "rule without keyword" "R-ENC-1 has no RFC 2119 keyword"

fresh
edit 'import sys; p=sys.argv[1]; s=open(p).read()
a=s.index("**R-ENC-1**"); b=s.index("\n\n", a)
open(p,"w").write(s+"\n"+s[a:b]+"\n")'
expect "duplicate definition" "R-ENC-1 defined twice"

fresh
edit 'import sys,re; p=sys.argv[1]; s=open(p).read()
open(p,"w").write(re.sub(r"\n\| R-ENC-2 \|[^\n]*", "", s))'
expect "rule missing from the index" "R-ENC-2 is missing from Appendix C"

fresh
n="$(python3 "$checker" --root "$root" --list | wc -l)"
edit "import sys,re; p=sys.argv[1]; s=open(p).read()
open(p,'w').write(s.replace('\n$n rules.', '\n$((n - 1)) rules.'))"
expect "wrong count in the index" "Appendix C says $((n - 1)) rules"

fresh
fam="R-ENC"; num=$((9000 + RANDOM % 999))
edit "import sys; p=sys.argv[1]; s=open(p).read()
s=s.replace('| R-ENC-1 | 2 |', '| $fam-$num | 2 | ghost |\n| R-ENC-1 | 2 |')
open(p,'w').write(s)"
expect "index lists an undefined rule" "Appendix C lists $fam-$num, which is not defined"

fresh
edit 'import sys; p=sys.argv[1]; s=open(p).read()
open(p,"w").write(s.replace("| R-ENC-2 | 2 |", "| R-ENC-2 | 3.1 |"))'
expect "index gives the wrong section" "Appendix C gives R-ENC-2 section 3.1"

fresh
edit 'import sys,re; p=sys.argv[1]; s=open(p).read()
open(p,"w").write(re.sub(r"\n\| R-ENC \|[^\n]*", "", s))'
expect "family missing from the prefix table" "family R-ENC missing"

fresh
edit "import sys; p=sys.argv[1]; s=open(p).read()
open(p,'w').write(s.replace('### 1.3 Terms', 'See $fam-$num.\n\n### 1.3 Terms'))"
expect "spec cites an undefined rule" "cites $fam-$num, which is not defined"

fresh
printf '/* %s-%s */\nint x;\n' "$fam" "$num" >"$tmp/t/src/x.c"
expect "source comment cites an undefined rule" \
    "src/x.c:1: cites $fam-$num, which is not defined"

fresh
printf '/* R-ENC-9..%s */\n' "$num" >"$tmp/t/src/y.h"
printf '/* R-ENC-1..3 */\n' >"$tmp/t/src/z.h"
echo '/* R-ENC-10..11 */' >>"$tmp/t/src/z.h"
expect "range running past the last rule" "src/z.h:2: cites R-ENC-11"

exit "$fail"
