"""manners: robots.txt for robots that behave, on the Web, in Geminispace and in Gopherspace."""

__version__ = "0.1.0"

from .fetch import FetchResult, fetch_robots, robots_locations
from .profiles import PROFILES, Profile
from .robots import Decision, Diagnostic, Group, RobotsTxt, parse

__all__ = [
    "PROFILES",
    "Decision",
    "Diagnostic",
    "FetchResult",
    "Group",
    "Profile",
    "RobotsTxt",
    "__version__",
    "fetch_robots",
    "parse",
    "robots_locations",
]
