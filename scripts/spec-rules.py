#!/usr/bin/env python3
"""Check the numbered rules of docs/spec.md (standard library only).

A rule is a paragraph (or list item) that starts with its identifier in
bold, `**R-FAMILY-n**:`. The checker fails (exit 1, one line per problem) when:

  - a rule's opening paragraph has no RFC 2119 keyword in capitals;
  - an identifier is defined twice;
  - a rule's family is missing from the prefix table of section 1.2;
  - Appendix C (rule index) does not list exactly the defined rules, lists
    one twice, gives a rule another section than the one defining it, or
    states another count than the number of rules;
  - docs/spec.md itself, or a comment in src/ include/ tests/ tools/, cites
    an identifier that is not defined (ranges such as R-CC-1..3 count as
    every rule in the range).

Nothing is hard-coded about which families or rules exist, so helpers can
add rules in any family. Usage:

  scripts/spec-rules.py [--root DIR] [--spec FILE] [--list | --json]

--list prints the rule ids, one a line; --json prints every rule with its
section, strongest keyword (MUST, SHOULD or MAY) and opening paragraph.
"""

import argparse
import json
import os
import re
import sys

RULE_DEF = re.compile(r"^(?:- |[0-9]+\. )?\*\*(R-[A-Z]+-[0-9]+)\*\*")
RULE_REF = re.compile(r"\bR-([A-Z]+)-([0-9]+)(?:\.\.([0-9]+))?")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
SECTION_NUM = re.compile(r"^(?:Appendix\s+)?([0-9]+(?:\.[0-9]+)*|[A-Z](?:\.[0-9]+)*)[.:]?\s")
# BCP 14 keywords, only in capitals (RFC 8174).
KEYWORDS = [("MUST", r"\bMUST\b|\bREQUIRED\b|\bSHALL\b"),
            ("SHOULD", r"\bSHOULD\b|\bRECOMMENDED\b"),
            ("MAY", r"\bMAY\b|\bOPTIONAL\b")]
SOURCE_DIRS = ("src", "include", "tests", "tools")
SOURCE_EXT = (".c", ".h", ".cc", ".cpp", ".py", ".sh", ".lua", ".cmake",
              ".txt", ".md", ".json")


class Rule:
    def __init__(self, rid, line, section):
        self.id = rid
        self.line = line
        self.section = section
        self.text = ""

    def keyword(self):
        for name, pattern in KEYWORDS:
            if re.search(pattern, self.text):
                return name
        return None


def family(rid):
    return rid.rsplit("-", 1)[0]


def section_of(title):
    m = SECTION_NUM.match(title + " ")
    return m.group(1) if m else None


def opening_paragraph(lines, start):
    """The rule's first paragraph: up to a blank line, or for a bullet up
    to the next bullet at the same level."""
    out = [lines[start]]
    item = re.compile(r"^(?:- |[0-9]+\. )")
    bullet = bool(item.match(lines[start]))
    for line in lines[start + 1:]:
        if not line.strip() or HEADING.match(line):
            break
        if bullet and item.match(line):
            break
        out.append(line)
    return " ".join(s.strip() for s in out)


def parse_rules(lines):
    rules, section, in_code = [], None, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        h = HEADING.match(line)
        if h:
            sec = section_of(h.group(2))
            if sec:
                section = sec
            continue
        m = RULE_DEF.match(line)
        if m:
            rule = Rule(m.group(1), i + 1, section)
            rule.text = opening_paragraph(lines, i)
            rules.append(rule)
    return rules


def appendix_c(lines):
    """(count stated, [(rule, section, line)]) of the rule index."""
    start = None
    for i, line in enumerate(lines):
        h = HEADING.match(line)
        if h and start is None and re.match(r"Appendix C\b", h.group(2)):
            start = i + 1
        elif h and start is not None and len(h.group(1)) <= 2:
            end = i
            break
    else:
        end = len(lines)
    if start is None:
        return None, []
    count, rows = None, []
    for i in range(start, end):
        line = lines[i]
        m = re.match(r"^([0-9]+) rules\b", line)
        if m and count is None:
            count = int(m.group(1))
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and \
                re.fullmatch(r"R-[A-Z]+-[0-9]+", cells[0]):
            rows.append((cells[0], cells[1], i + 1))
    return count, rows


def prefix_table(lines):
    """Families listed in the prefix table of section 1.2."""
    fams = set()
    for line in lines:
        m = re.match(r"^\|\s*(R-[A-Z]+)\s*\|", line)
        if m:
            fams.add(m.group(1))
    return fams


def refs_in(text):
    """Every rule id a text cites, ranges expanded."""
    out = []
    for m in RULE_REF.finditer(text):
        fam, lo, hi = m.group(1), int(m.group(2)), m.group(3)
        hi = int(hi) if hi else lo
        if hi < lo or hi - lo > 64:
            hi = lo
        for n in range(lo, hi + 1):
            out.append("R-%s-%d" % (fam, n))
    return out


def source_files(root):
    for d in SOURCE_DIRS:
        base = os.path.join(root, d)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXT):
                    yield os.path.join(dirpath, name)


def check(root, spec_path):
    with open(spec_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    rel = os.path.relpath(spec_path, root)
    errors = []
    rules = parse_rules(lines)
    defined = {}
    for r in rules:
        if r.id in defined:
            errors.append("%s:%d: %s defined twice (first at line %d)" %
                          (rel, r.line, r.id, defined[r.id].line))
        else:
            defined[r.id] = r
        if r.keyword() is None:
            errors.append("%s:%d: %s has no RFC 2119 keyword in its "
                          "opening paragraph" % (rel, r.line, r.id))
    fams = prefix_table(lines)
    for fam in sorted({family(r.id) for r in rules} - fams):
        errors.append("%s: family %s missing from the prefix table of "
                      "section 1.2" % (rel, fam))

    count, rows = appendix_c(lines)
    if count is None:
        errors.append("%s: Appendix C has no 'N rules.' line" % rel)
    elif count != len(defined):
        errors.append("%s: Appendix C says %d rules, the spec defines %d" %
                      (rel, count, len(defined)))
    listed = {}
    for rid, sec, line in rows:
        if rid in listed:
            errors.append("%s:%d: Appendix C lists %s twice" % (rel, line, rid))
        listed[rid] = sec
        if rid not in defined:
            errors.append("%s:%d: Appendix C lists %s, which is not defined" %
                          (rel, line, rid))
        elif defined[rid].section and sec != defined[rid].section:
            errors.append("%s:%d: Appendix C gives %s section %s, it is "
                          "defined in %s" % (rel, line, rid, sec,
                                             defined[rid].section))
    for rid, r in defined.items():
        if rid not in listed:
            errors.append("%s:%d: %s is missing from Appendix C" %
                          (rel, r.line, rid))

    for i, line in enumerate(lines):
        for rid in refs_in(line):
            if rid not in defined:
                errors.append("%s:%d: cites %s, which is not defined" %
                              (rel, i + 1, rid))
    for path in source_files(root):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            errors.append("%s: %s" % (path, e))
            continue
        for n, line in enumerate(text.split("\n"), 1):
            for rid in refs_in(line):
                if rid not in defined:
                    errors.append("%s:%d: cites %s, which is not defined "
                                  "in %s" % (os.path.relpath(path, root), n,
                                             rid, rel))
    return rules, errors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here),
                    help="repository root (default: this script's ..)")
    ap.add_argument("--spec", help="spec file (default: ROOT/docs/spec.md)")
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--list", action="store_true", help="print rule ids")
    out.add_argument("--json", action="store_true", help="print rules as JSON")
    args = ap.parse_args()
    spec = args.spec or os.path.join(args.root, "docs", "spec.md")
    rules, errors = check(args.root, spec)
    if args.list:
        for r in rules:
            print(r.id)
    elif args.json:
        json.dump([{"id": r.id, "section": r.section, "keyword": r.keyword(),
                    "line": r.line, "text": r.text} for r in rules],
                  sys.stdout, indent=1)
        print()
    for e in errors:
        print("spec-rules: " + e, file=sys.stderr)
    if errors:
        print("spec-rules: FAIL, %d problem(s)" % len(errors), file=sys.stderr)
        return 1
    if not (args.list or args.json):
        kinds = {}
        for r in rules:
            kinds[r.keyword()] = kinds.get(r.keyword(), 0) + 1
        print("spec-rules: %d rules in %d families (MUST %d, SHOULD %d, "
              "MAY %d); index and citations consistent" %
              (len(rules), len({family(r.id) for r in rules}),
               kinds.get("MUST", 0), kinds.get("SHOULD", 0),
               kinds.get("MAY", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
