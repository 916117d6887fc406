"""``manners watch``: who keeps your robots.txt, read from the server's own access logs.

A server's access log is the one witness an admin has of what robots did.  This package reads
the logs real Gemini, Gopher and Web servers write (:mod:`.logs`, pure: one parser a format;
:mod:`.sources`, the files: rotated siblings, gzip, bad bytes) so that the layers above can
judge each robot against the robots.txt that was in force: :mod:`.versions` (dated robots.txt),
:mod:`.clients` (who made a request), :mod:`.judge` (the fold to a :mod:`.verdicts` report).
Beside them, :mod:`.nft` (the impolite clients as an nftables set, for the firewall) and
:mod:`.follow` (the logs read on as the server writes and rotates them).  On top,
:mod:`.command` (the command line) and :mod:`.render` (its table and JSON); no lower layer
imports them.
"""
