//! Any bytes parse, and every question about them is answered without a panic: the file is
//! the input's first part, the target and agent its last lines.  The one-pass line table
//! equals the line grammar's reading line by line, and a file read as text equals it read
//! as bytes; a robot is chosen for from the agent lines as from delimited groups; a first
//! answer (found as written) equals the answers from compiled rules.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use manners_core::line::Kind;
use manners_core::{Profile, RobotsTxt, Table};

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().rposition(|&b| b == 0xff).unwrap_or(data.len());
    let (file, rest) = data.split_at(cut);
    let rest = rest.get(1..).unwrap_or_default();
    let target = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    let agent = String::from_utf8_lossy(rest.split(|&b| b == b'\n').nth(1).unwrap_or(b"FooBot"));
    let roles: [&str; 2] = ["indexer", "archiver"];
    assert_eq!(
        Table::new(file, Some(512_000)),
        Table::by_line(file, Some(512_000))
    );
    if let Ok(text) = std::str::from_utf8(file) {
        assert_eq!(
            Table::of_text(text, Some(512_000)),
            Table::new(file, Some(512_000))
        );
    }
    let robots = RobotsTxt::parse(file, None, Some(512_000));
    for profile in Profile::builtin() {
        let profile = Arc::new(profile);
        let r = robots.reread(Some(Arc::clone(&profile)));
        if !profile.records_1994 {
            let [one_pass, by_groups] = r.choices_both_ways(&profile, &agent);
            assert_eq!(one_pass, by_groups);
        }
        for t in [target, b"/", b"gemini://h/a", b"gopher://h/1/x"] {
            for _ in 0..2 {
                // twice: the first answer is found as written, the second from compiled rules
                let a = r.allowed(t, &agent, &roles);
                let d = r.decide(t, &agent, &roles);
                assert_eq!(a.is_ok(), d.is_ok());
                if let (Ok(a), Ok(d)) = (a, d) {
                    assert_eq!(a, d.allowed);
                }
            }
        }
        r.crawl_delay(&agent, &[], &profile);
        r.request_rate(&agent, &roles, &profile, None);
        r.check_interval(&agent, &roles, &profile);
        let groups = r.groups(&profile);
        for g in &groups.groups {
            assert!(g.lines.0 <= g.lines.1);
            r.group_names(groups, g, Kind::UserAgent, profile.records_1994);
        }
    }
    let t = robots.table();
    for i in 0..t.len() {
        t.line(i);
    }
    robots.sitemaps();
});
