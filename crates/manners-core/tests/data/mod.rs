//! Where the engine's tests and examples find the repository's data (`data/` at the top of the
//! clone, described in data/SOURCES.md): the one definition of its paths for Rust, included by
//! the unit tests (src/testing.rs), tests/corpus.rs and examples/oneshot.rs.

use std::path::PathBuf;

/// `data/unpacked/NAME`, where scripts/setup unpacks `data/corpus/NAME.tar.xz`; or a sentence
/// saying to run scripts/setup when it is not there (its stamp, written last, is missing).
pub fn unpacked(name: &str) -> Result<PathBuf, String> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let dir = data.join("unpacked").join(name);
    if dir.is_dir() && data.join(format!("unpacked/{name}.sha256")).is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "data/corpus/{name}.tar.xz is not unpacked: run scripts/setup (or scripts/unpack-data)"
        ))
    }
}
