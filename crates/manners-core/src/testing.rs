//! What the unit tests share: files made by a fixed generator, and the web corpus.

#[path = "../tests/data/mod.rs"]
mod data;

/// `count` files, each of fewer than `max_pieces` pieces, drawn by a fixed xorshift from
/// `seed`: the same files on every run.
pub(crate) fn generated<'a>(
    seed: u64,
    count: usize,
    max_pieces: u64,
    pieces: &'a [&'a [u8]],
) -> impl Iterator<Item = Vec<u8>> + 'a {
    let mut state = seed;
    (0..count).map(move |_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut s = state;
        (0..state % max_pieces)
            .flat_map(|_| {
                s = s.rotate_left(5).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                pieces[(s >> 59) as usize % pieces.len()].iter().copied()
            })
            .collect()
    })
}

/// Every `step`-th file of the web corpus (`data/corpus/web.tar.xz`, unpacked by scripts/setup).
pub(crate) fn web_corpus(step: usize) -> impl Iterator<Item = Vec<u8>> {
    let dir = data::unpacked("web").unwrap_or_else(|e| panic!("{e}"));
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .step_by(step)
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
}
