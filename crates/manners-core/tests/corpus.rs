//! Every real file of the web corpus parses and answers under every profile, and its
//! decisions name the lines that hold the rules they quote.

use std::sync::Arc;

use manners_core::{Profile, RobotsTxt};

mod data;

fn corpus(dir: &str) -> Vec<(String, Vec<u8>)> {
    let root = data::unpacked(dir).unwrap_or_else(|e| panic!("{e}"));
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_web_corpus_parses_and_every_decision_names_its_line() {
    let files = corpus("web");
    assert!(files.len() > 4000);
    let mut decided = 0;
    for (name, body) in files.iter().step_by(7) {
        for profile in Profile::builtin() {
            let robots = RobotsTxt::parse(body, Some(Arc::new(profile)), Some(512_000));
            let t = robots.table();
            for i in (0..t.len()).filter(|&i| t.kind(i).is_rule()).take(20) {
                let value = t.value(i);
                let mut path = b"/".to_vec();
                path.extend(value.iter().filter(|&&b| b != b'*' && b != b'$'));
                let url = [format!("https://{name}").as_bytes(), &path].concat();
                for target in [&path[..], &url[..]] {
                    let Ok(d) = robots.decide(target, "googlebot", &[]) else {
                        continue;
                    };
                    assert_eq!(robots.allowed(target, "googlebot", &[]).unwrap(), d.allowed);
                    if let (Some(line), Some((_, quoted))) = (d.line, &d.rule) {
                        let held = (0..t.len())
                            .find(|&k| t.number(k) == line)
                            .map(|k| t.value(k));
                        assert_eq!(held, Some(&quoted[..]), "{name}: line {line}");
                        decided += 1;
                    }
                }
            }
        }
    }
    assert!(decided > 1000, "only {decided} decisions named a line");
}
