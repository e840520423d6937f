"""docs_check.py -- the reference keeps up with the code (issue 30).

Prints TAP: every key conf/conf.c accepts ([server] and [route NAME]) and
every rule name of the schema.*, messages.* and repair.* sections (their
rule_names and limit_names tables) is named in docs/configuration.md, and
every relative link of README.md and docs/*.md resolves to a file (and a
#heading within it, when it names one), and every acceptance rule of
docs/dialects.md (section 9, "N. ...") says when and against what it was
last checked: "[checked YYYY-MM-DD: <source>]" or "[no current doc found
...; source: <source>, YYYY-MM-DD]" (issue 27). Run by
test/integration/docs.sh.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."


def read(p):
    with open(os.path.join(root, p), encoding="utf-8") as f:
        return f.read()


def word(name, text):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text)


n = 0
failed = 0


def check(ok, name, detail=""):
    global n, failed
    n += 1
    if ok:
        print("ok %d - %s" % (n, name))
    else:
        failed += 1
        print("not ok %d - %s" % (n, name))
        if detail:
            print("#   " + detail)


doc = read("docs/configuration.md")
keys = sorted(set(re.findall(r'strcmp\(key, "([a-z_]+)"\)', read("conf/conf.c"))))
check(len(keys) > 30, "conf/conf.c's keys are found (%d)" % len(keys))
missing = [k for k in keys if not word(k, doc)]
check(not missing, "every conf key is in docs/configuration.md", "missing: %s" % missing)
for prefix, path in (("schema", "sanitize/schema.c"), ("messages", "sanitize/hygiene.c"),
                     ("repair", "repair/repair_rules.c")):
    src = read(path)
    names = []
    m = re.search(r"(?:rule_names|conf_rules)\[\] = \{(.*?)\};", src, re.S)
    if m:
        names += re.findall(r'\{"([a-zA-Z0-9_]+)",', m.group(1))
    m = re.search(r"limit_names\[\] = \{(.*?)\};", src, re.S)
    if m:
        names += re.findall(r'"([a-z_]+)"', m.group(1))
    check(names, "%s's rule names are found (%d)" % (prefix, len(names)))
    missing = [x for x in names if not word(x, doc)]
    check(not missing, "every %s.* rule is in docs/configuration.md" % prefix,
          "missing: %s" % missing)


def anchors(text):
    out = set()
    for h in re.findall(r"^#+\s+(.*)$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(a)
    return out


pages = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs")))
                         if f.endswith(".md")]
for page in pages:
    text = read(page)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # an outside address
        path, _, frag = target.partition("#")
        file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(os.path.join(root, file)):
            bad.append(target)
        elif frag and file.endswith(".md") and frag not in anchors(read(file)):
            bad.append(target)
    check(not bad, "every link of %s resolves" % page, "broken: %s" % bad)

# Issue 27: each dialect rule notes the date and source it was checked on.
dia = read("docs/dialects.md")
sec = dia[dia.index("## 9. Acceptance rules"):dia.index("## 10. Sources")]
rules = re.findall(r"^(\d+)\. (.*)$", sec, re.M)
note = re.compile(r"\[(?:checked \d{4}-\d{2}-\d{2}: \S+"
                  r"|no current doc found[^\]]*?; source: \S+, \d{4}-\d{2}-\d{2})[^\]]*\]")
check(len(rules) >= 75, "docs/dialects.md's acceptance rules are found (%d)" % len(rules))
bare = [num for num, text in rules if not note.search(text)]
check(not bare, "every dialect rule has a checked note with a date and a source",
      "no note: rules %s" % bare)
nums = [int(num) for num, _ in rules]
check(len(nums) == len(set(nums)), "dialect rule numbers are unique",
      "repeated: %s" % sorted(x for x in set(nums) if nums.count(x) > 1))
print("1..%d" % n)
sys.exit(1 if failed else 0)
