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
for line in missing:
    print(line)
print("reference_texts: %d flags, %d commands, %d subcommands, %d omissions"
      % (len(flags), len(commands), len(subcommands), len(missing)))
sys.exit(1 if missing else 0)
