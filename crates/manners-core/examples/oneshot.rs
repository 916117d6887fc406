//! Where one-shot time goes: the line table alone, then parse + one decision, over a corpus.
//! Run: cargo run --release --example oneshot [-- DIR] (default: the web corpus, data/unpacked/web)
use std::time::Instant;

use manners_core::{Profile, RobotsTxt, Table};

#[path = "../tests/data/mod.rs"]
mod data;

fn main() {
    let dir = match std::env::args().nth(1) {
        Some(dir) => dir.into(),
        None => data::unpacked("web").unwrap_or_else(|e| {
            eprintln!("oneshot: {e}");
            std::process::exit(2)
        }),
    };
    let mut files: Vec<(Vec<u8>, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            eprintln!("oneshot: {}: {e}", dir.display());
            std::process::exit(2)
        })
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (
                std::fs::read(&p).unwrap(),
                format!("https://{name}/some/page.html?id=1"),
            )
        })
        .collect();
    files.sort();
    let bytes: usize = files.iter().map(|f| f.0.len()).sum();
    let profile = Some(std::sync::Arc::new(Profile::google()));
    for round in 0..3 {
        let t = Instant::now();
        let mut n = 0;
        for (body, _) in &files {
            n += Table::new(body, None).len();
        }
        let table = t.elapsed();
        let t = Instant::now();
        let mut allowed = 0;
        for (body, url) in &files {
            let r = RobotsTxt::parse(body, profile.clone(), None);
            allowed += usize::from(r.allowed(url.as_bytes(), "googlebot", &[]).unwrap());
        }
        let both = t.elapsed();
        println!(
            "round {round}: {} files, {bytes} bytes, {n} lines kept: table {:.1} ms ({:.2} us/file), parse+allowed {:.1} ms ({:.2} us/file), {allowed} allowed",
            files.len(),
            table.as_secs_f64() * 1e3,
            table.as_secs_f64() * 1e6 / files.len() as f64,
            both.as_secs_f64() * 1e3,
            both.as_secs_f64() * 1e6 / files.len() as f64
        );
    }
}
