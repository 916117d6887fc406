"""Tools for the people who run servers: ``manners site`` (how a server speaks to robots),
``manners diff`` (what an edit to robots.txt changes) and ``manners serve`` (both, on a page).

Each is a pure part (checks and verdicts over bytes and parsed files) and a command around it
that does the fetching and the printing, as the rest of manners is built."""
