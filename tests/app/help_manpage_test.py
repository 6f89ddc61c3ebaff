#!/usr/bin/env python3
"""`hepd --help`, the man page (packaging/hepd.8) and the command-line parser (daemon/app/cli.cpp)
describe the same command line:
- the options and subcommands the parser knows (its string literals) are those of the help;
- the binary accepts every option of the help, and refuses one it does not know;
- every option of the help has its entry in the man page, every option the man page has an entry
  for or mentions is one of the help, and both list the same subcommands;
- every subcommand answers --help with the same text, and -h with it too;
- `hepd --version` (and -V) prints the line the man page shows.

  help_manpage_test.py HEPD_BINARY MANPAGE CLI_SOURCE
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402

HEPD, MANPAGE, CLI_SOURCE = sys.argv[1:4]
# An option: one or two dashes and a letter, not inside a word (check-config, re-reads).
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
FAKE = "--no-such-option"


def run(*args):
    """(exit status, stdout, stderr); the status is None when hepd had to be killed (it took
    arguments meant to exit at once for a daemon's and started serving)."""
    try:
        r = subprocess.run([HEPD, *args], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:  # run() has killed it
        return None, "", ""
    return r.returncode, r.stdout, r.stderr


def help_subcommands(text):
    """The words after `hepd` on the usage lines: `pcap`, `snapshot show`, ..."""
    found = set()
    for line in text.splitlines():
        m = re.match(r"\s+hepd ((?:[a-z][a-z-]*(?: |$))+)", line)
        if m:
            found.add(m.group(1).strip())
    return found


def roff_text(line):
    """A man page line as it reads: dashes unescaped, font changes and zero-width marks gone."""
    line = re.sub(r"\\f(\[[A-Z]*\]|[A-Z])", "", line)
    return line.replace("\\-", "-").replace("\\&", "")


def man_page(path):
    """(options with an entry of their own, options mentioned anywhere, subcommands of the
    SYNOPSIS, the --version line template)."""
    lines = [l.rstrip("\n") for l in open(path, encoding="utf-8") if not l.startswith('.\\"')]
    entries, mentioned, subcommands, version_line = set(), set(), set(), None
    section = None
    for i, raw in enumerate(lines):
        text = roff_text(raw)
        if raw.startswith(".SH"):
            section = text[3:].strip().strip('"')
            continue
        mentioned.update(OPTION.findall(text))
        # An entry: the tag line after .TP that starts with an option (not `hepd ...`).
        if i > 0 and lines[i - 1].startswith(".TP"):
            words = re.sub(r'^\.[A-Z]+\s*', "", text).replace('"', " ").split()
            if words and OPTION.fullmatch(words[0]):
                entries.update(OPTION.findall(text))
        if section == "SYNOPSIS" and raw.startswith(".B hepd "):
            subcommands.add(" ".join(text.split()[2:]))
        # The example line of the --version entry.
        if raw.startswith(".EX") and version_line is None and any(
                "--version" in roff_text(l) for l in lines[max(0, i - 8):i] if l.startswith(".BR")):
            version_line = roff_text(lines[i + 1])
    return entries, mentioned, subcommands, version_line


def parser_literals(path):
    """Options and subcommands the parser compares arguments with."""
    source = open(path, encoding="utf-8").read()
    literals = set(re.findall(r'"([^"\s]+)"', source.split("std::string usage_text()")[0] +
                              source.split("CommandLine parse_command_line")[1]))
    options = {l for l in literals if OPTION.fullmatch(l)}
    words = set(re.findall(r'args\[\d\] (?:==|!=) "([a-z-]+)"', source))
    return options, words


def accepted(option, value, config):
    """Whether the binary takes `option` (with `value` when the help gives it one) in one of the
    places the help allows: before --version (which exits 0 once the arguments before it have
    parsed; never alone, which would start the daemon), after `pcap FILE`, or after
    `check-config FILE`. Not before --help: help wins over everything."""
    given = [option, value] if value else [option]
    probes = [[*given, "--version"], ["pcap", "f.pcap", *given, "--version"], ["check-config", config, *given]]
    return any(run(*p)[0] == 0 for p in probes)


def main():
    status, help_text, _ = run("--help")
    check("hepd --help exits 0", status, 0)
    help_options = set(OPTION.findall(help_text))
    print("help options:", sorted(help_options))
    # The value the help shows after an option, if any: `--json PATH`, `--cores N`.
    values = {o: v for o, v in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?: ([A-Z][A-Z:]*)\b)?", help_text)
              if v}

    for args in (["-h"], ["pcap", "--help"], ["check-config", "--help"], ["snapshot", "show", "--help"]):
        status, text, _ = run(*args)
        check(f"hepd {' '.join(args)}: exit status, and the same help", (status, text == help_text), (0, True))

    code_options, code_words = parser_literals(CLI_SOURCE)
    check("the parser's options are the help's", sorted(code_options), sorted(help_options))
    words_in_help = {w for s in help_subcommands(help_text) for w in s.split()}
    check("the parser's subcommand words are the help's", sorted(code_words), sorted(words_in_help))

    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:
        config.write("log_level: info\n")
        config.flush()
        refused = [o for o in sorted(help_options) if not accepted(o, values.get(o), config.name)]
        check("the binary accepts every option of the help", refused, [])
        check(f"the binary refuses {FAKE}", accepted(FAKE, None, config.name), False)
        check(f"the binary refuses {FAKE} VALUE", accepted(FAKE, "1", config.name), False)

    entries, mentioned, man_subcommands, version_line = man_page(MANPAGE)
    print("man page entries:", sorted(entries))
    check("help options without a man page entry", sorted(help_options - entries), [])
    check("man page entries not in the help", sorted(entries - help_options), [])
    check("options the man page mentions that the help does not have", sorted(mentioned - help_options), [])
    check("subcommands: man page SYNOPSIS vs help",
          sorted(s for s in man_subcommands if s), sorted(help_subcommands(help_text)))

    status, version, _ = run("--version")
    check("hepd --version exits 0", status, 0)
    check("-V prints the same", run("-V")[:2], (0, version))
    check("the man page shows the --version line", version_line is not None, True)
    if version_line is not None:
        pattern = re.escape(version_line.strip()).replace("VERSION", r"\d+\.\d+\.\d+").replace(
            "COMMIT", r"(?:[0-9a-f]{7,40}|unknown)")
        check(f"`{version.strip()}` is `{version_line.strip()}`", bool(re.fullmatch(pattern, version.strip())), True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
