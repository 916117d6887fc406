"""manners: robots.txt for robots that behave, on the Web, in Geminispace and in Gopherspace."""

from .profiles import PROFILES, Profile
from .robots import Decision, Diagnostic, Group, RobotsTxt, parse

__version__ = "0.1.0"

__all__ = ["PROFILES", "Decision", "Diagnostic", "Group", "Profile", "RobotsTxt", "__version__", "parse"]
