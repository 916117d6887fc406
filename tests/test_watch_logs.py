"""Reading access logs (manners.watch.logs and .sources), in process: each format's parser on
lines its server wrote, the detector, and the files: rotated and gzipped siblings in order,
binary and empty files, overlong and truncated lines, bad bytes and terminal escapes.

The sample lines were copied from what each server wrote on loopback (jetforce 1.0.0,
molly-brown of Debian 12, agate 3.3.25 with --log-ip, gophernicus 3.1.1 with -l, pygopherd
3.1.0 with logmethod = file, nginx 1.22 combined); tests/test_watch_servers.py reads them
as the servers write them now.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from manners.terminal import safe
from manners.watch import sources
from manners.watch.judge import Judge
from manners.watch.logs import FORMATS, LACKS, NOISE, Hit, detect, lacking
from manners.watch.sources import MAX_LINE, SHOWN, LogError, LogReader, rotated
from manners.watch.versions import Version, Versions

pytestmark = pytest.mark.quick

T = 1795950837.0  # 29/Nov/2026:11:13:57 +0000

JETFORCE = [
    '::ffff:127.0.0.1 [29/Nov/2026:11:13:57 +0000] "gemini://localhost/robots.txt" 20 "text/plain" 49',
    '::ffff:127.0.0.1 [29/Nov/2026:11:13:57 +0000] "gemini://localhost/nope\x1b]0;x\x07 "q" 51 '
    '"Not Found" 14',
    '::1 [29/Nov/2026:11:13:58 +0000] "gemini://localhost/robots.txt" 20 "text/plain" 49',
    '127.0.0.1 [29/Nov/2026:12:13:57 +0100] "garbage" 59 "Invalid URL" 16',
]
MOLLY = [
    "2026-11-29T11:13:57Z\t127.0.0.1\t20\tgemini://localhost/robots.txt",
    "2026-11-29T11:13:57Z\t127.0.0.1\t59\t-",
    "2026-11-29T11:13:57Z\t127.0.0.1\t51\tgemini://localhost/%FF%FE",
    "2026-11-29T11:13:58Z\t[::1]\t20\tgemini://localhost:1965/robots.txt",
]
AGATE = [
    "[2026-11-29T11:13:57Z INFO  agate] Started listener on 127.0.0.1:19652",
    '[2026-11-29T11:13:57Z INFO  agate] 127.0.0.1:19652 127.0.0.1 "gemini://localhost/robots.txt" 20 '
    '"text/plain"',
    "[2026-11-29T11:13:57Z INFO  agate] 127.0.0.1:19652 127.0.0.1 "
    '"gemini://localhost/nope\\u{1b}]0;x\\u{7} \\"q\\\\"'
    ' 53 "Proxy request refused"',
    '[2026-11-29T11:13:58Z INFO  agate] [::1]:19652 ::1 "gemini://localhost/caf\\u{e9}\\t" 51 "Not found"',
    '[2026-11-29T11:13:58Z INFO  agate] 127.0.0.1:19652 - "" 59 "Non-UTF-8 request"',
    '[2026-11-29T11:13:58Z WARN  agate] 127.0.0.1:19652 127.0.0.1 "" 00 "TLS error" '
    "error:received corrupt message",
]
GOPHERNICUS = [
    '127.0.0.1 localhost:17071 - [29/Nov/2026:11:13:57 +0000] "GET 0/robots.txt HTTP/1.0" 200 34 ""'
    ' "Unknown gopher client"',
    '127.0.0.1 localhost:17071 - [29/Nov/2026:11:13:57 +0000] "GET 0/nope\x1b]0;x\x07 "q HTTP/1.0" 404 0 ""'
    ' "Unknown gopher client"',
    '::1 localhost:17070 - [29/Nov/2026:11:13:58 +0000] "GET 1/ HTTP/1.0" 200 4096 ""'
    ' "Unknown gopher client"',
]
PYGOPHERD = [
    "Pygopherd starting, using configuration file /tmp/manners-pygopherd-oik3trtw/pygopherd.conf",
    "127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt",
    "127.0.0.1 [GopherProtocol/None] EXCEPTION FileNotFound: '/nope\x1b]0;x\x07 \"q' does not exist"
    " (no handler found)",
    "127.0.0.1 [GopherProtocol/None] EXCEPTION BrokenPipeError: [Errno 32] Broken pipe",
    "127.0.0.1 [HTTPProtocol/FileHandler]: /index.txt",
]
COMBINED = [
    '127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /robots.txt HTTP/1.1" 200 34 "-" "Foo/1.0 (+http://x)"',
    '127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /%1B%5B31m/caf\\xC3\\xA9?a=\\x22b\\x22 HTTP/1.1" 404 153'
    ' "http://r/\\x22x" "Evil\\x1B[31m\\x22bot\\xFF\\x5C \\xC3\\xA9"',
    '127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "\\x16\\x03\\x01\\x00\\x05hello" 400 157 "-" "-"',
    '::1 - - [29/Nov/2026:11:13:58 +0000] "GET / HTTP/1.0" 403 153 "-" "-"',
]
SAMPLES = {"jetforce": JETFORCE, "molly-brown": MOLLY, "agate": AGATE, "gophernicus": GOPHERNICUS,
           "pygopherd": PYGOPHERD, "combined": COMBINED}  # fmt: skip


def parse(fmt: str, line: str) -> Hit:
    hit = FORMATS[fmt].parse(line, "access.log", 7)
    assert isinstance(hit, Hit), (fmt, line, hit)
    return hit


def test_jetforce_lines() -> None:
    first = parse("jetforce", JETFORCE[0])
    assert first == Hit(T, "::ffff:127.0.0.1", "gemini", "localhost", "gemini://localhost/robots.txt", "20",
                        None, 49, "access.log", 7)  # fmt: skip
    assert (
        parse("jetforce", JETFORCE[1]).target == 'gemini://localhost/nope\x1b]0;x\x07 "q'
    )  # raw, quote and all
    assert parse("jetforce", JETFORCE[2]).client == "::1"
    garbage = parse("jetforce", JETFORCE[3])
    assert (garbage.when, garbage.host, garbage.target, garbage.status) == (T, None, "garbage", "59")  # +0100


def test_molly_brown_lines() -> None:
    assert parse("molly-brown", MOLLY[0]) == Hit(T, "127.0.0.1", "gemini", "localhost",
                                                 "gemini://localhost/robots.txt", "20", None, None,
                                                 "access.log", 7)  # fmt: skip
    assert parse("molly-brown", MOLLY[1]).target == "-"
    closed = "2026-11-29T11:13:57Z\t127.0.0.1\t40\t-"  # a connection closed before its request
    assert FORMATS["molly-brown"].parse(closed, "", 0) is NOISE
    six = parse("molly-brown", MOLLY[3])
    assert (six.client, six.host, six.when) == ("::1", "localhost:1965", T + 1)


def test_agate_lines() -> None:
    assert FORMATS["agate"].parse(AGATE[0], "", 0) is NOISE
    assert parse("agate", AGATE[1]) == Hit(T, "127.0.0.1", "gemini", "localhost", "gemini://localhost/robots.txt",
                                           "20", None, None, "access.log", 7)  # fmt: skip
    assert parse("agate", AGATE[2]).target == 'gemini://localhost/nope\x1b]0;x\x07 "q\\'  # escapes undone
    six = parse("agate", AGATE[3])
    assert (six.client, six.target, six.status) == ("::1", "gemini://localhost/café\t", "51")
    no_ip = parse("agate", AGATE[4])
    assert (no_ip.client, no_ip.target, no_ip.status) == (None, "", "59")
    assert FORMATS["agate"].parse(AGATE[5], "", 0) is NOISE  # a failed handshake is no request
    bare = parse("agate", AGATE[1].split("] ", 1)[1])  # without env_logger's prefix: no time
    assert bare.when is None and bare.target == "gemini://localhost/robots.txt"


def test_gophernicus_lines() -> None:
    first = parse("gophernicus", GOPHERNICUS[0])
    assert first == Hit(T, "127.0.0.1", "gopher", "localhost:17071", "/robots.txt", "200", None, 34,
                        "access.log", 7)  # fmt: skip
    assert parse("gophernicus", GOPHERNICUS[1]).target == '/nope\x1b]0;x\x07 "q'
    six = parse("gophernicus", GOPHERNICUS[2])
    assert (six.client, six.target, six.size) == ("::1", "/", 4096)


def test_pygopherd_lines() -> None:
    parsed = [FORMATS["pygopherd"].parse(line, "", 0) for line in PYGOPHERD]
    assert parsed[0] is NOISE and parsed[3] is NOISE
    assert parsed[1] == Hit(None, "127.0.0.1", "gopher", None, "/robots.txt", None, None, None)
    missing = parsed[2]
    assert isinstance(missing, Hit) and missing.target == '/nope\x1b]0;x\x07 "q' and missing.status is None
    assert isinstance(parsed[4], Hit) and parsed[4].scheme == "http"
    logged = parse("pygopherd", "2026-11-29T11:13:57.000000+00:00 gopher pygopherd[812]: " + PYGOPHERD[1])
    assert (logged.when, logged.target) == (T, "/robots.txt")  # through syslog: a time
    bsd = parse("pygopherd", "Nov 29 11:13:57 gopher pygopherd[812]: " + PYGOPHERD[1])
    assert bsd.when is None  # no year in it: no time, not a guess


def test_combined_lines() -> None:
    assert parse("combined", COMBINED[0]) == Hit(T, "127.0.0.1", "web", None, "/robots.txt", "200",
                                                 "Foo/1.0 (+http://x)", 34, "access.log", 7)  # fmt: skip
    evil = parse("combined", COMBINED[1])
    assert evil.target == '/%1B%5B31m/café?a="b"'
    assert evil.agent == 'Evil\x1b[31m"bot\ufffd\\ é'  # kept raw in the record ...
    assert safe(evil.agent) == 'Evil\\x1b[31m"bot\ufffd\\ é'  # ... escaped when shown
    assert parse("combined", COMBINED[2]).target == "\x16\x03\x01\x00\x05hello"  # not HTTP: as sent
    six = parse("combined", COMBINED[3])
    assert (six.client, six.agent, six.status) == ("::1", None, "403")


def test_apache_variants() -> None:
    # Apache's own escapes (\" and \\), "-" for no bytes, vhost_combined's "host:port" in front, and common
    line = ('www.example.org:443 2001:db8::7 - - [29/Nov/2026:11:13:57 +0000] '
            '"GET /a\\"b\\\\c HTTP/1.1" 304 - "-" "Bot/2 \\"x\\""')  # fmt: skip
    hit = parse("combined", line)
    assert (hit.host, hit.client, hit.target, hit.size, hit.agent) == (
        "www.example.org:443",
        "2001:db8::7",
        '/a"b\\c',
        None,
        'Bot/2 "x"',
    )
    common = parse("combined", '10.0.0.1 - alice [29/Nov/2026:11:13:57 +0000] "GET /x HTTP/1.0" 200 5')
    assert (common.target, common.agent, common.when) == ("/x", None, T)


@pytest.mark.parametrize("line", [
    "", "hello", '127.0.0.1 - - [31/Feb/2026:11:13:57 +0000] "GET / HTTP/1.1" 200 3 "-" "-"',
    '127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET / HTTP/1.1',  # truncated
    "2026-11-29T11:13:57\t127.0.0.1\t20\tgemini://localhost/",  # no offset: no instant
])  # fmt: skip
def test_lines_no_format_reads(line: str) -> None:
    assert all(f.parse(line, "", 0) is None for f in FORMATS.values())


def test_detect_names_each_format() -> None:
    for name, lines in SAMPLES.items():
        assert detect(lines) == name, name
    assert detect(["", "  "]) is None
    assert detect(["hello", "world"]) is None
    # a gophernicus line is a combined line too: the particular format wins
    assert FORMATS["combined"].parse(GOPHERNICUS[0], "", 0) is not None
    assert detect(GOPHERNICUS[:1]) == "gophernicus"
    assert detect(COMBINED + ["junk"] * 3) == "combined"


def test_what_each_format_lacks() -> None:
    fields = set(Hit.__dataclass_fields__)
    assert set(LACKS) <= fields
    for fmt in FORMATS.values():
        assert fmt.lacks <= set(LACKS), fmt.name
    assert LACKS["when"] in lacking(FORMATS["pygopherd"])
    assert "pacing" in LACKS["when"]
    assert LACKS["when"] not in lacking(FORMATS["jetforce"])
    assert LACKS["agent"] in lacking(FORMATS["molly-brown"])
    assert LACKS["agent"] not in lacking(FORMATS["combined"])


# --------------------------------------------------------------------------- files


def write(path: Path, lines: list[str], compress: bool = False) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def combined_line(n: int) -> str:
    return f'127.0.0.{n} - - [29/Nov/2026:11:13:{n:02d} +0000] "GET /{n} HTTP/1.1" 200 1 "-" "bot/{n}"'


def test_rotated_and_gzipped_siblings_are_read_oldest_first(tmp_path: Path) -> None:
    log = write(tmp_path / "access.log", [combined_line(5), combined_line(6)])
    write(tmp_path / "access.log.1", [combined_line(3), combined_line(4)])
    write(tmp_path / "access.log.2.gz", [combined_line(2)], compress=True)
    write(tmp_path / "access.log.10.gz", [combined_line(1)], compress=True)
    write(tmp_path / "other.log.1", [combined_line(9)])
    assert [p.name for p in rotated(log)] == [
        "access.log.10.gz",
        "access.log.2.gz",
        "access.log.1",
        "access.log",
    ]
    reader = LogReader([log])
    hits = list(reader)
    assert [h.target for h in hits] == ["/1", "/2", "/3", "/4", "/5", "/6"]
    assert [(Path(h.file).name, h.line) for h in hits][2:4] == [("access.log.1", 1), ("access.log.1", 2)]
    assert [f.format for f in reader.files] == ["combined"] * 4
    # given twice, or a sibling named too: each file is read once
    assert len(list(LogReader([log, tmp_path / "access.log.1", log]))) == 6
    assert [h.target for h in LogReader([log], siblings=False)] == ["/5", "/6"]


def test_dated_siblings(tmp_path: Path) -> None:
    log = write(tmp_path / "access.log", [combined_line(3)])
    write(tmp_path / "access.log-20261128.gz", [combined_line(2)], compress=True)
    write(tmp_path / "access.log-20261101", [combined_line(1)])
    assert [h.target for h in LogReader([log])] == ["/1", "/2", "/3"]


def test_a_file_per_format_in_one_reading(tmp_path: Path) -> None:
    files = [write(tmp_path / f"{name}.log", lines) for name, lines in SAMPLES.items()]
    reader = LogReader(files)
    hits = list(reader)
    assert [f.format for f in reader.files] == list(SAMPLES)
    assert {h.scheme for h in hits} == {"gemini", "gopher", "http", "web"}
    assert reader.unparsed == 0
    assert sum(f.noise for f in reader.files) == 4


def test_an_empty_log_is_no_error(tmp_path: Path) -> None:
    empty = tmp_path / "access.log"
    empty.write_bytes(b"")
    blank = write(tmp_path / "blank.log", ["", "   ", ""])
    reader = LogReader([empty, blank])
    assert list(reader) == []
    assert [(f.format, f.lines) for f in reader.files] == [(None, 0), (None, 0)]


def sentence(error: LogError) -> str:
    text = str(error)
    assert text.endswith(".") and "\n" not in text and "Traceback" not in text
    return text


def test_a_binary_file_is_no_log(tmp_path: Path) -> None:
    binary = tmp_path / "access.log"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10)
    with pytest.raises(LogError) as caught:
        list(LogReader([binary]))
    assert "binary" in sentence(caught.value)
    zipped = tmp_path / "z.log"
    zipped.write_bytes(gzip.compress(b"\x00\x01\x02" * 100))
    with pytest.raises(LogError, match="binary"):
        list(LogReader([zipped]))


def test_text_that_is_no_log(tmp_path: Path) -> None:
    prose = write(tmp_path / "notes.txt", ["Dear diary,", "today a robot came."] * 40)
    with pytest.raises(LogError) as caught:
        list(LogReader([prose]))
    assert "not an access log" in sentence(caught.value)
    with pytest.raises(LogError) as caught:
        list(LogReader([write(tmp_path / "j.log", JETFORCE)], fmt="combined"))
    assert "not a combined log" in sentence(caught.value)
    with pytest.raises(LogError) as caught:
        LogReader([prose], fmt="apache\x1b[2J")
    assert "\x1b" not in sentence(caught.value)
    with pytest.raises(LogError) as caught:
        list(LogReader([tmp_path / "missing.log"]))
    assert "cannot be read" in sentence(caught.value)
    broken = tmp_path / "broken.log.gz"
    broken.write_bytes(gzip.compress(("\n".join(COMBINED) + "\n").encode() * 50)[:200])
    with pytest.raises(LogError) as caught:
        list(LogReader([broken]))
    assert "damaged gzip" in sentence(caught.value)


def test_bad_lines_are_counted_and_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    overlong = combined_line(1)[:-1] + "x" * (MAX_LINE + 10) + '"'
    junk = ["\x1b]0;owned\x07 junk", "more junk"] + [f"junk {n}" for n in range(SHOWN)]
    lines = [combined_line(1), overlong, junk[0], combined_line(2), *junk[1:], combined_line(3)]
    data = ("\n".join(lines) + "\n").encode()
    data += b'127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /\xff\xfe HTTP/1.1" 200 1 "-" "b\xc3"\r\n'
    data += b'127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /trunc'  # cut mid-line, no line feed
    log.write_bytes(data)
    reader = LogReader([log])
    hits = list(reader)
    assert [h.target for h in hits] == ["/1", "/2", "/3", "/\ufffd\ufffd"]
    assert hits[-1].agent == "b\ufffd"
    assert hits[1].line == 4
    read = reader.files[0]
    assert (read.lines, read.hits, read.unparsed, read.overlong) == (len(lines) + 2, 4, len(junk) + 2, 1)
    assert len(reader.shown) == SHOWN
    assert reader.shown[0].line == 2 and str(MAX_LINE) in reader.shown[0].text
    assert reader.shown[1].text == "\\x1b]0;owned\\x07 junk" and reader.shown[1].line == 3


def test_an_overlong_line_is_not_kept_whole(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(("\n".join([combined_line(1), "y" * (MAX_LINE * 4), combined_line(2)]) + "\n").encode())
    reader = LogReader([log])
    assert [h.target for h in reader] == ["/1", "/2"]
    assert reader.files[0].overlong == 1
    assert all(len(u.text) < 100 for u in reader.shown)
    only_long = tmp_path / "long.log"
    only_long.write_bytes(b"z" * (MAX_LINE * 3))
    with pytest.raises(LogError):
        list(LogReader([only_long]))


# --------------------------------------------------------------------------- read by the engine


def both_ways(paths: list[Path], chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``LogReader.feed`` (the engine reading chunks of ``chunk`` bytes into the fold) and iterating
    (line by line in Python, each Hit fed): the same files, counts, shown lines and report."""
    versions = Versions([Version("User-agent: *\nDisallow: /2\nCrawl-delay: 5\n")])
    by_line, by_chunk = LogReader(paths), LogReader(paths)
    judged = Judge(versions)
    for hit in by_line:
        judged.feed(hit)
    monkeypatch.setattr(sources, "CHUNK", chunk)
    folded = Judge(versions)
    assert by_chunk.feed(folded.fold) == 0
    assert by_chunk.files == by_line.files and by_chunk.shown == by_line.shown
    assert folded.report() == judged.report()


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_the_engine_reads_as_python_does_in_any_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    log = tmp_path / "access.log"
    overlong = combined_line(1)[:-1] + "x" * (MAX_LINE + 10) + '"'
    lines = [combined_line(1), overlong, "\x1b]0;owned\x07 junk", combined_line(2), "", " ", combined_line(3)]
    data = ("\n".join(lines) + "\n").encode() + "é".join(["junk"] * 100).encode() + b"\n"
    data += b'127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /\xff\xfe HTTP/1.1" 200 1 "-" "b\xc3"\r\n'
    data += b'127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] "GET /trunc" 200 1 "-" "x"'  # no line feed
    log.write_bytes(data)
    write(tmp_path / "access.log.1.gz", [combined_line(n) for n in range(1, 60)], compress=True)
    samples = [write(tmp_path / f"{name}.log", lines) for name, lines in SAMPLES.items()]
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    both_ways([log, *samples, empty], chunk, monkeypatch)


def test_the_engine_reading_a_gzip_damaged_past_its_start_is_one_sentence(tmp_path: Path) -> None:
    whole = gzip.compress("".join(combined_line(n % 50 + 1) + "\n" for n in range(20_000)).encode())
    broken = tmp_path / "access.log.gz"
    broken.write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(LogError) as caught:
        LogReader([broken]).feed(Judge(Versions([Version("")])).fold)
    assert "damaged gzip" in sentence(caught.value)


def test_the_engine_keeps_requests_within_since_and_until_and_counts_the_untimed(tmp_path: Path) -> None:
    log = write(tmp_path / "access.log", [combined_line(n) for n in range(1, 10)])
    folded = Judge(Versions([Version("")]))
    reader = LogReader([log])
    assert reader.feed(folded.fold, since=1795950783.0, until=1795950786.0) == 0  # :13:03 to :13:06
    assert sum(r.requests for r in folded.report().robots) + folded.report().others.requests == 4
    untimed = write(tmp_path / "gopher.log", SAMPLES["pygopherd"])
    requests = len(list(LogReader([untimed])))  # none has a time: each is kept, and counted
    assert requests == 3 and LogReader([untimed]).feed(Judge(Versions([Version("")])).fold, since=0.0) == 3
