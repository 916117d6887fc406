"""The cache's two failures, in a module of their own: each store raises them, and the
package that chooses a store (``manners.cache``) imports the stores."""


class CacheError(Exception):
    """The shared cache cannot be used (for example, its Redis server is down)."""


class LeaseLost(Exception):
    """A lease is no longer held by the one acting under it (it expired and was taken back, or
    the URL was leased anew): a request, a settling or a retry under it was refused, and the
    frontier left as it was.  Not a failure of the frontier: the worker drops that URL's work."""
