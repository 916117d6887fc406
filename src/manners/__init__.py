"""manners: robots.txt for robots that behave, on the Web, in Geminispace and in Gopherspace."""

from .cache import CacheError
from .crawl import Crawler, Page
from .fetch import FetchResult, fetch_robots, robots_locations
from .profiles import PROFILES, Profile
from .robot import Policy, Robot, RobotDecision, SyncRobot
from .robots import (
    Decision,
    Diagnostic,
    Group,
    Preference,
    RequestRate,
    RobotsTxt,
    Usage,
    asked_spacing,
    parse,
)
from .version import __version__

__all__ = [
    "PROFILES",
    "CacheError",
    "Crawler",
    "Decision",
    "Diagnostic",
    "FetchResult",
    "Group",
    "Page",
    "Policy",
    "Preference",
    "Profile",
    "RequestRate",
    "Robot",
    "RobotDecision",
    "RobotsTxt",
    "SyncRobot",
    "Usage",
    "__version__",
    "asked_spacing",
    "fetch_robots",
    "parse",
    "robots_locations",
]
