//! Any bytes, read as a gemtext page and as a Gopher menu by the small-net link scanners
//! (manners_core::smallnet), with every question answered: no panic, and the links come out
//! distinct and at most max_links.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    manners_core::smallnet::exercise(data);
});
