"""Types of manners._core, the binding of the Rust engine (crates/manners-py)."""

from collections.abc import Iterable
from datetime import datetime, time
from typing import Any, ClassVar, final

from typing_extensions import disjoint_base

from .profiles import Profile as PyProfile
from .robots import Decision, Diagnostic, Group, Line, RequestRate, Usage

__all__ = [
    "FIELD_SPELLINGS",
    "MAX_LINE_BYTES",
    "GemtextScan",
    "LogScan",
    "MenuScan",
    "Profile",
    "RobotsTxt",
    "WatchFold",
    "agent_token",
    "asked_spacing",
    "google_escape",
    "google_path",
    "gopher_selectors",
    "head_lines",
    "normalise",
    "parse",
    "parse_log_line",
    "parse_usage_statement",
    "product_token",
    "rate",
    "url_path",
    "usage_malformed",
    "watch_client",
]

MAX_LINE_BYTES: int
FIELD_SPELLINGS: frozenset[str]

# a batch of links: (urls, item types, mirror flags, indices in the batch of the types to decode
# from their URL)
_LinkLists = tuple[list[str], list[str | None], list[bool], list[int]]

@final
class GemtextScan:
    """A gemtext page's links, scanned by the engine (driven by manners.crawl.links)."""

    def __new__(
        cls,
        text: bytes,
        absolute: str | None,
        relative: str | None,
        gopher: bool,
        refuses: bool,
        max_links: int,
    ) -> GemtextScan: ...
    def step(self, budget: int) -> tuple[Any, ...]: ...
    def set_head(self, raw: str, head: str | None, gopher: bool) -> None: ...
    def set_dots(self, dots: str, prefix: str | None) -> None: ...
    def add(self, url: str, item_type: str | None) -> None: ...
    @property
    def full(self) -> bool: ...
    @property
    def more(self) -> int: ...
    def title(self) -> bytes | None: ...
    def finish(self) -> int: ...
    def links(self, start: int, stop: int) -> _LinkLists: ...

@final
class MenuScan:
    """A Gopher menu's links, scanned by the engine (driven by manners.crawl.links)."""

    def __new__(cls, body: bytes, max_links: int) -> MenuScan: ...
    def step(self, budget: int) -> tuple[Any, ...]: ...
    def set_place(self, field: bytes, place: str) -> None: ...
    def remember(self, target: str, url: str | None, item_type: str | None) -> None: ...
    def add(self, url: str, item_type: str | None, mirror: bool) -> None: ...
    def count_more(self) -> None: ...
    @property
    def full(self) -> bool: ...
    @property
    def more(self) -> int: ...
    def title(self) -> str | None: ...
    def finish(self) -> int: ...
    def links(self, start: int, stop: int) -> _LinkLists: ...

@final
class Profile:
    """A profile's switches, as the engine reads them (built from a ``manners.Profile``)."""

    def __new__(
        cls,
        name: str,
        target: str,
        wildcards: bool,
        anchor: bool,
        allow: bool,
        index_html: bool,
        virtual_agents: bool,
        preamble: str,
        records: str,
        always_allowed: list[str],
        agent: str,
        fields_end_groups: bool,
        roles: str,
        usage_preferences: bool = False,
    ) -> Profile: ...
    @property
    def name(self) -> str: ...

@disjoint_base
class RobotsTxt:
    """A parsed robots.txt.  Build it with :func:`manners.parse`."""

    def __new__(
        cls,
        data: bytes | bytearray | memoryview | str | RobotsTxt,
        profile: PyProfile | None = None,
        core: Profile | None = None,
        max_bytes: int | None = None,
    ) -> RobotsTxt: ...
    @property
    def profile(self) -> PyProfile | None: ...
    @property
    def sitemaps(self) -> list[str]: ...
    @property
    def diagnostics(self) -> list[Diagnostic]: ...
    def allowed(self, target: str, agent: str = "*", roles: Iterable[str] | None = None) -> bool: ...
    def decide(self, target: str, agent: str = "*", roles: Iterable[str] | None = None) -> Decision: ...
    def usage(self, target: str, agent: str = "*", roles: Iterable[str] | None = None) -> Usage: ...
    def crawl_delay(
        self, agent: str = "*", roles: Iterable[str] | None = (), *, profile: str | PyProfile | None = None
    ) -> float | None: ...
    def request_rate(
        self,
        agent: str = "*",
        roles: Iterable[str] | None = (),
        *,
        profile: str | PyProfile | None = None,
        at: datetime | time | None = None,
    ) -> RequestRate | None: ...
    def check_interval(
        self, agent: str = "*", roles: Iterable[str] | None = (), *, profile: str | PyProfile | None = None
    ) -> float | None: ...
    def lines(self) -> list[Line]: ...
    def groups(self, profile: str | PyProfile | None = None) -> list[Group]: ...
    def applies(
        self, agent: str = "*", roles: Iterable[str] | None = (), profile: str | PyProfile | None = None
    ) -> tuple[list[tuple[str, list[tuple[int, int]]]], str]: ...
    def reread(self, profile: str | PyProfile) -> RobotsTxt: ...
    def _table(
        self,
    ) -> tuple[
        list[tuple[int, str, str, str, bool]],
        tuple[int, int] | None,
        bool,
        bool,
        list[int],
        list[int],
        bool,
        bool,
        int,
    ]: ...
    def __sizeof__(self) -> int: ...

def parse(
    data: bytes | bytearray | memoryview | str,
    profile: str | PyProfile | None = None,
    max_bytes: int | None = 512_000,
) -> RobotsTxt:
    """Parse a robots.txt body.  Never raises on content: anything at all parses."""

def product_token(agent: str) -> str | None: ...
def agent_token(value: str) -> str: ...
def url_path(target: str) -> str: ...
def normalise(s: str, *, pattern: bool) -> str: ...
def google_escape(s: str) -> str: ...
def google_path(s: str) -> str: ...
def gopher_selectors(s: str) -> tuple[str, ...]: ...
def head_lines(data: bytes, n: int) -> bytes: ...
def rate(value: str) -> RequestRate | None: ...
def usage_malformed(value: str) -> tuple[int, str] | None: ...
def parse_usage_statement(value: str) -> tuple[tuple[tuple[str, str], ...], tuple[int, str] | None]: ...

# manners watch: one access-log line read as a format ("jetforce", "molly-brown", "agate",
# "gophernicus", "pygopherd", "combined"): the fields of manners.watch.logs.Hit up to its size,
# "noise" for a line of the server's that records no request, None for a line it does not read
_LogHit = tuple[float | None, str | None, str, str | None, str, str | None, str | None, int | None]

def parse_log_line(format: str, line: str) -> _LogHit | str | None: ...

# the fold's sums of one robot, as WatchFold.export gives them (see its docstring)
_Example = tuple[str, int, str, float | None]
_Breach = tuple[str, str, int | None, str, int, tuple[_Example, ...]]
_Host = tuple[str, int, float, float | None, int, tuple[_Example, ...], int, int, int, tuple[_Example, ...]]

@final
class WatchFold:
    """The per-request fold of ``manners watch`` (driven by manners.watch.judge)."""

    DAY: ClassVar[float]
    TOLERANCE: ClassVar[float]
    NEIGHBOURS: ClassVar[int]
    SLOW_DOWN_WAIT: ClassVar[float]
    EXAMPLES: ClassVar[int]
    PERSON_SECONDS: ClassVar[float]
    ROLES: ClassVar[tuple[str, str, str, str]]
    PERSON_REQUESTS: ClassVar[dict[str, int]]

    def __new__(
        cls,
        versions: Iterable[tuple[float | None, str, RobotsTxt, RobotsTxt, RobotsTxt]],
        v4: int,
        v6: int,
        slow_down_wait: float,
    ) -> WatchFold: ...
    def feed(
        self,
        when: float | None,
        client: str | None,
        scheme: str,
        host: str | None,
        target: str,
        status: str | None,
        agent: str | None,
        file: str,
        line: int,
    ) -> None: ...
    def export(self) -> tuple[list[tuple[Any, ...]], int, int, int]: ...

@final
class LogScan:
    """One access-log file read by the engine, chunk by chunk, into a WatchFold (manners.watch.sources)."""

    def __new__(cls, format: str) -> LogScan: ...
    def feed(
        self,
        fold: WatchFold,
        data: bytes,
        end: bool,
        file: str,
        since: float | None,
        until: float | None,
        room: int,
    ) -> int: ...
    @property
    def counts(self) -> tuple[int, int, int, int, int, int]: ...
    @property
    def shown(self) -> list[tuple[int, str | None]]: ...

def watch_client(address: str, v4: int, v6: int) -> str: ...
def asked_spacing(
    robots: RobotsTxt,
    agent: str,
    roles: Iterable[str] | None,
    profile: str | PyProfile | None,
    at: datetime | time,
) -> float: ...
