//! The fold of `src/manners/watch/judge.py`: requests in, per-client sums out.
//! (To be filled.)
