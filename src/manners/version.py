"""The package's version, in a module of its own.

The fetchers, the crawler, WARC files and the command line all name it (``manners/0.1.0``
in a User-agent, in ``warcinfo``, in ``--version``).  Read from here, it costs them no
import of the package itself, which imports every one of them.
"""

__version__ = "0.1.0"
