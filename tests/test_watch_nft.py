"""``--nft FILE`` (manners.watch.nft): the impolite clients as an nftables script.

The text, in process (quick): the table, its two sets and chain, the elements and their comments
(hostile reasons cannot break the script), blocks and overlaps, re-writing only on change.  Then
for real: the script loaded with Debian's ``nft -f`` inside a network namespace of its own
(tests/nft_driver.py under ``unshare -n``, root), the admin's two drop lines added: the impolite
address's new connections are dropped while a polite one's still connect, and a second version
loaded over the first replaces the sets and keeps the drop lines.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from manners.watch.nft import COMMENT_BYTES, DROP_LINES, NftError, comment, nft_text, write_set
from manners.watch.verdicts import Others, Report, RobotVerdict

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

HOSTILE = 'evil" } ; flush ruleset # $x \\ \n add table ip x\x1b[31m\x00\u202e{'


def robot(client: str, *reasons: str, token: str | None = None, verdict: str = "impolite") -> RobotVerdict:
    return RobotVerdict(
        client=client, token=token, kind="web" if token else "gemini", verdict=verdict,
        reasons=reasons if verdict == "impolite" else (), robot_because="it asked for robots.txt",
        requests=3, first=None, last=None, robots_fetches=1, robots_first=True, refetched=None, stale=0,
        charged=len(reasons), breaches=(), kept_roles=(), broke_roles=(), roles="", pacing=(),
        slow_downs=(), notes=(),
    )  # fmt: skip


def report(*robots: RobotVerdict) -> Report:
    return Report(robots=robots, others=Others(0, 0, 0), versions=("always",), notes=())


def elements(text: str, name: str) -> list[tuple[str, str]]:
    """(element, comment) of the set ``name``'s add element block."""
    m = re.search(rf"^add element inet manners {name} \{{\n(.*?)^\}}$", text, re.S | re.M)
    if m is None:
        return []
    return re.findall(r'^\t(\S+) comment "([^"\n]*)",?$', m[1], re.M)


# --- the text -------------------------------------------------------------------------------


@pytest.mark.quick
def test_the_script_declares_the_sets_flushes_them_and_adds_the_impolite_ones() -> None:
    text = nft_text(
        report(
            robot("192.0.2.7", "disallowed for * by line 3 of the robots.txt of always: 4 requests"),
            robot("192.0.2.8", verdict="polite"),
            robot("2001:db8::/64", "closer than the 10 s asked at the site: 2 requests"),
            robot("198.51.100.0/24", "did not wait", token="rudebot"),
        )
    )
    assert text.startswith("#!/usr/sbin/nft -f\n")
    body = text[text.index("table inet manners {") :]
    assert body.splitlines()[:13] == [
        "table inet manners {",
        "\tset impolite4 {",
        "\t\ttype ipv4_addr",
        "\t\tflags interval",
        "\t}",
        "\tset impolite6 {",
        "\t\ttype ipv6_addr",
        "\t\tflags interval",
        "\t}",
        "\tchain input {",
        "\t\ttype filter hook input priority filter - 1; policy accept;",
        "\t}",
        "}",
    ]
    # flushed before they are filled, after being declared: loading it again replaces them
    assert body.index("flush set inet manners impolite4") < body.index("add element inet manners impolite4")
    assert body.index("flush set inet manners impolite6") < body.index("add element inet manners impolite6")
    assert elements(text, "impolite4") == [
        ("192.0.2.7", "disallowed for * by line 3 of the robots.txt of always: 4 requests"),
        ("198.51.100.0/24", "rudebot: did not wait"),
    ]
    assert elements(text, "impolite6") == [
        ("2001:db8::/64", "closer than the 10 s asked at the site: 2 requests")
    ]
    assert "192.0.2.8" not in text
    for line in DROP_LINES:  # the admin's two lines, shown in the file
        assert f"#   {line}\n" in text
    assert "delete" not in text and "destroy" not in text  # the admin's rules in the chain survive


@pytest.mark.quick
def test_no_impolite_client_makes_empty_sets_that_still_replace_the_old_ones() -> None:
    text = nft_text(report(robot("192.0.2.8", verdict="polite")))
    assert "flush set inet manners impolite4\nflush set inet manners impolite6\n" in text
    assert "add element" not in text
    assert "# impolite clients: 0 IPv4, 0 IPv6" in text


@pytest.mark.quick
def test_hostile_reasons_and_tokens_stay_inside_their_comment() -> None:
    text = nft_text(report(robot("192.0.2.7", HOSTILE, token='bot"}\n'), robot("192.0.2.9", "x" * 500)))
    found = elements(text, "impolite4")
    assert [e for e, _ in found] == ["192.0.2.7", "192.0.2.9"]
    first, second = (c for _, c in found)
    assert '"' not in first and "\n" not in first and "\x1b" not in first and "\x00" not in first
    assert "\u202e" not in first and "\\x1b" in first  # escaped, visibly
    assert first.startswith("bot'}\\x0a: evil' } ; flush ruleset # $x \\ \\x0a add")
    assert second == "x" * (COMMENT_BYTES - 3) + "..."
    # every line of the body is one of the script's own shapes: nothing from the log made a line
    for line in text[text.index("table inet manners") :].splitlines():
        assert re.fullmatch(r'(\t+[^"]*|\t\S+ comment "[^"]*",?|[^"#]*)', line), line


@pytest.mark.quick
def test_a_comment_is_cut_to_nfts_bytes_at_a_character() -> None:
    assert comment("é" * 100).encode() == ("é" * 62 + "...").encode()
    assert len(comment("é" * 100).encode()) <= COMMENT_BYTES
    assert comment("a" * COMMENT_BYTES) == "a" * COMMENT_BYTES
    assert comment('say "hi"\tnow') == "say 'hi'\\x09now"


@pytest.mark.quick
def test_one_address_with_several_robots_and_a_block_holding_another_are_one_element() -> None:
    text = nft_text(
        report(
            robot("192.0.2.7", "r1", token="abot"),
            robot("192.0.2.7", "r2", token="bbot"),
            robot("192.0.2.0/24", "r3"),
            robot("::ffff:0:0/96", "mapped"),  # IPv6 stays IPv6
            robot("crawler.example", "named"),
        )
    )
    assert elements(text, "impolite4") == [("192.0.2.0/24", "r3 | abot: r1 | bbot: r2")]
    assert elements(text, "impolite6") == [("::ffff:0:0/96", "mapped")]
    assert "# left out: 1 impolite clients logged by a name, not an address" in text
    assert "crawler.example" not in text


@pytest.mark.quick
def test_write_set_writes_atomically_and_only_on_change(tmp_path: Path) -> None:
    path = tmp_path / "impolite.nft"
    one = report(robot("192.0.2.7", "r1"))
    assert write_set(path, one) is True
    assert path.read_text() == nft_text(one)
    inode = path.stat().st_ino
    assert write_set(path, one) is False
    assert path.stat().st_ino == inode  # not rewritten
    two = report(robot("192.0.2.7", "r1"), robot("192.0.2.9", "r2"))
    assert write_set(str(path), two) is True
    assert path.read_text() == nft_text(two)
    assert path.stat().st_ino != inode  # a new file renamed over the old one
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["impolite.nft"]  # no temporary left


@pytest.mark.quick
def test_write_set_says_in_one_sentence_when_it_cannot(tmp_path: Path) -> None:
    with pytest.raises(NftError, match=r"^.*nowhere/x\.nft cannot be written: No such file or directory\.$"):
        write_set(tmp_path / "nowhere" / "x.nft", report())


# --- loaded for real --------------------------------------------------------------------------


def in_namespace(*files: Path) -> list[dict[str, object]]:
    if shutil.which("nft") is None or shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("this test needs nft (Debian's nftables: scripts/setup), unshare and root")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    cmd = ["unshare", "-n", sys.executable, str(HERE / "nft_driver.py"), *map(str, files)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    loads: list[dict[str, object]] = json.loads(done.stdout)
    return loads


def test_the_set_loaded_with_nft_drops_the_impolite_and_lets_the_polite_connect(tmp_path: Path) -> None:
    first = tmp_path / "first.nft"
    second = tmp_path / "second.nft"
    write_set(
        first, report(robot("127.0.0.2", HOSTILE + "\\"), robot("2001:db8:1::/64", "ignored 44", token="x"))
    )
    write_set(second, report(robot("127.0.0.3", "now this one"), robot("127.0.0.2", verdict="polite")))
    one, two = in_namespace(first, second)
    assert one["outcome"] == {
        "127.0.0.2": "dropped",
        "127.0.0.3": "connected",
        "2001:db8:1::2": "dropped",
        "2001:db8:2::3": "connected",
    }
    table = str(one["table"])
    hostile = comment(HOSTILE + "\\")
    assert f'127.0.0.2 comment "{hostile}"' in table  # the hostile reason, whole
    assert '2001:db8:1::/64 comment "x: ignored 44"' in table
    assert "ip saddr @impolite4 drop" in table and "ip6 saddr @impolite6 drop" in table
    # the second version replaced the sets' contents; the admin's drop lines were kept
    assert two["outcome"] == {
        "127.0.0.2": "connected",
        "127.0.0.3": "dropped",
        "2001:db8:1::2": "connected",
        "2001:db8:2::3": "connected",
    }
    table = str(two["table"])
    assert "127.0.0.3 comment" in table and "127.0.0.2" not in table and "2001:db8:1::" not in table
    assert table.count("@impolite4 drop") == 1 and table.count("@impolite6 drop") == 1
