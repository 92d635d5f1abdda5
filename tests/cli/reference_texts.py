#!/usr/bin/env python3
"""reference_texts.py - every command and flag the parser accepts is in
every reference text: --help, the bash, zsh and fish completion scripts
and the man page.

The parser's tables are read from the sources (src/cli/*.c: each
cli_option array, the command and subcommand tables), so a flag added to a
parser and forgotten in a text fails here.  Prints one line per omission
and exits 1 if there is any.  Usage: reference_texts.py FAUCET SOURCE_DIR
"""
import glob
import os
import re
import subprocess
import sys

faucet, src = sys.argv[1], sys.argv[2]
cli = os.path.join(src, "src", "cli")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- what the parser accepts ----------------------------------------------
flags = {}  # long flag -> the source file that accepts it
for path in sorted(glob.glob(os.path.join(cli, "*.c"))):
    text = read(path)
    for block in re.findall(r"cli_option\s+\w+\[\]\s*=\s*\{(.*?)\};", text, re.S):
        for name in re.findall(r'\{"([a-z][a-z0-9-]*)",\s*(?:\'.\'|0)\s*,', block):
            flags.setdefault(name, os.path.basename(path))
        if "CLI_TENANT_OPTION" in block:
            flags.setdefault("tenant", os.path.basename(path))
    if "cli_take_wait(" in text and "static" not in text.split("cli_take_wait(")[0][-40:]:
        flags.setdefault("wait", os.path.basename(path))
for f in ("help", "version"):  # said by every text in their own way
    flags.pop(f, None)


def table(path, pattern):
    return re.findall(pattern, read(os.path.join(cli, path)))


commands = table("main.c", r'\{"([a-z]+)",\s*cli_\w+_main\}')
subcommands = table("state.c", r'\{"([a-z]+)",\s*cli_state_\w+\}')
if not commands or not subcommands or len(flags) < 20:
    sys.exit("reference_texts: could not read the parser's tables from %s" % cli)

# ---- the texts -------------------------------------------------------------
def out(*args):
    r = subprocess.run([faucet, *args], capture_output=True, text=True)
    return r.stdout + r.stderr


helps = out("--help") + out("state", "--help")
for c in commands:
    helps += out(c, "--help")
for s in subcommands:
    helps += out("state", s, "--help")
for extra in (("lock", "list"), ("lock", "break"), ("backfill", "status"),
              ("state", "export", "--format", "meltano"),
              ("state", "import", "--format", "meltano")):
    helps += out(*extra, "--help")
texts = {"--help": helps}
for shell in ("bash", "zsh", "fish"):
    texts["completion " + shell] = out("completion", shell)
man = read(os.path.join(src, "doc", "faucet.1"))
texts["doc/faucet.1"] = re.sub(r"\\f[BIRP]", "", man).replace("\\-", "-")

# ---- the check -------------------------------------------------------------
missing = []
for name, text in texts.items():
    fish = name == "completion fish"
    for flag, where in sorted(flags.items()):
        # fish spells a long flag `-l flag`, or lists it in a loop
        # `for opt in a b c ... -l $opt`.
        if fish:
            said = ("-l " + flag + " ") in text or ("-l " + flag + "\n") in text or any(
                flag in line.split()[3:] for line in text.splitlines()
                if line.startswith("for opt in"))
        else:
            said = ("--" + flag) in text
        if not said:
            missing.append("%s lacks --%s (accepted by src/cli/%s)" % (name, flag, where))
    for word in commands + subcommands:
        if not re.search(r"\b%s\b" % re.escape(word), text):
            missing.append("%s lacks the command '%s'" % (name, word))
# Every variable faucet reads or hands to a command, in the man page.
env = set()
for path in glob.glob(os.path.join(cli, "*.c")) + glob.glob(os.path.join(src, "src", "backfill", "*.c")):
    env.update(re.findall(r'"(FAUCET_[A-Z_]+[A-Z])[="]', read(path)))
for var in sorted(env):
    if var not in texts["doc/faucet.1"]:
        missing.append("doc/faucet.1 lacks the variable %s" % var)
# The man page's version is the command's.
version = out("--version").split()[-1]
if ('"faucet %s"' % version) not in man:
    missing.append("doc/faucet.1's .TH does not say faucet %s" % version)

# ---- each command's own --help, from its row --------------------------------
# `faucet help --reference` gives the rows: every command's (and variant's)
# --help starts with its usage line, names every flag of its row, and its
# prose is the man page's paragraph of that command: one text, so the two
# cannot drift.
def norm(text):
    return " ".join(text.split())


def man_text(roff):
    """The man page's words: macro lines dropped (an item's tag kept),
    escapes undone."""
    lines = []
    for line in roff.splitlines():
        if line.startswith("."):
            m = re.match(r'\.IP "([^"]*)"', line)
            line = m.group(1) if m else ""
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\&", "")
    return norm(text.replace("\\e", "\\"))


def usage_of(help_text):
    """The first usage of a help, its lines joined, [OPTIONS] left out."""
    lines = help_text.split("\n")
    first = [lines[0]]
    for line in lines[1:]:
        if not line.startswith(" ") or line.lstrip().startswith("faucet "):
            break
        first.append(line)
    return norm(" ".join(first).replace(" [OPTIONS]", ""))


def prose_of(help_text):
    """The paragraphs between the usage lines and the lists."""
    blocks = help_text.split("\n\n")[1:]
    prose = []
    for block in blocks:
        if block.startswith(("Options:", "Subcommands:", "Commands:", "Global options")):
            break
        prose.append(norm(block))
    return prose


man_words = man_text(man)
rows, variants, row_flags = [], [], {}
for line in out("help", "--reference").splitlines():
    f = line.split("\t")
    if f[0] == "command":
        rows.append((f[1], f[2] if len(f) > 2 else ""))
    elif f[0] == "variant":
        variants.append(f[1:])
    elif f[0] == "flag":
        row_flags.setdefault(f[1], []).append((f[2], f[3]))
if len(rows) < 20:
    missing.append("faucet help --reference lists only %d commands" % len(rows))
checked = []  # (what, argv, usage, flags)
for name, synopsis in rows:
    checked.append((name, name.split(), "%s %s" % (name, synopsis),
                    [f for f, _ in row_flags.get(name, [])]))
for name, when, synopsis, vflags in variants:
    argv = name.split() + when.split()
    if dict(row_flags.get(name, [])).get(argv[-1], "-") not in ("-", "="):
        argv.append("X")  # the selecting flag's value
    checked.append(("%s %s" % (name, when), argv, "%s %s" % (name, synopsis),
                    ["--" + v for v in vflags.split()]))
for what, argv, usage, want in checked:
    text = out(*argv, "--help")
    expected = norm(("usage: faucet " + usage).replace(" [OPTIONS]", ""))
    if not usage_of(text).startswith(expected):
        missing.append("'faucet %s --help' does not start with '%s'" % (what, expected))
    for flag in want:
        if flag not in text:
            missing.append("'faucet %s --help' lacks %s" % (what, flag))
    if what == "":
        continue  # the usage text is not the man page's
    for para in prose_of(text):
        if para not in man_words:
            missing.append("doc/faucet.1 lacks the prose of '%s': %s" % (what, para[:60]))

# ---- no help written by hand ------------------------------------------------
# A help is generated (src/cli/reference_gen.c); a usage line anywhere else
# is one that can drift.
for path in sorted(glob.glob(os.path.join(cli, "*.c")) +
                   glob.glob(os.path.join(src, "src", "serve", "*.c"))):
    if os.path.basename(path) == "reference_gen.c":
        continue
    for n, line in enumerate(read(path).splitlines(), 1):
        if re.search(r'"usage: faucet', line):
            missing.append("%s:%d: a hand-written help (--help is generated from "
                           "src/cli/reference.c)" % (os.path.relpath(path, src), n))

for line in missing:
    print(line)
print("reference_texts: %d flags, %d commands, %d subcommands, %d omissions"
      % (len(flags), len(commands), len(subcommands), len(missing)))
sys.exit(1 if missing else 0)
