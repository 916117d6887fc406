"""Web sites for the cache and scheduler tests: nginx server blocks that count robots.txt fetches."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from servers import nginx


@dataclass
class Site:
    url: str  # http://127.0.0.1:PORT
    log: Path

    def robots_fetches(self) -> int:
        """How many times robots.txt was asked for, from nginx's own access log."""
        if not self.log.exists():
            return 0
        return sum(" /robots.txt " in line for line in self.log.read_text().splitlines())


@contextmanager
def sites(bodies: list[str], workdir: Path) -> Iterator[list[Site]]:
    """One nginx server per robots.txt body, each with its own access log."""
    workdir.mkdir(parents=True, exist_ok=True)
    logs = [workdir / f"access-{n}.log" for n in range(len(bodies))]
    blocks = [
        f"access_log {log};"
        f" location = /robots.txt {{ default_type text/plain; return 200 '{_quote(body)}'; }}"
        " location / { return 200 'page'; }"
        for body, log in zip(bodies, logs, strict=True)
    ]
    with nginx(blocks, workdir) as ports:
        yield [Site(f"http://127.0.0.1:{port}", log) for port, log in zip(ports, logs, strict=True)]


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
