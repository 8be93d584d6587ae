//! `random_pool`: a file, or a directory whose every file is one pool, of records with texts
//! (`text`/`texts`) and media (`image`/`images`, `audio`/`audios`, `video`/`videos`, read as
//! `single_turn` reads them, files relative to the pool file) (AIPerf's `RandomPool`; no timing,
//! sessions or lengths). The dataset is `entries` conversations of one turn; conversation `i`'s
//! turn joins the texts and media of one record drawn at random, with replacement, from each
//! pool (pools in file-name order). Default sampling: shuffle.

use std::path::{Path, PathBuf};

use rand::RngExt;

use crate::conversation::{Content, Conversation, Dataset, Media, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj, media, texts};
use super::lines::JsonLines;
use super::session::SessionIds;

/// Loads a `random_pool` file or directory and draws `entries` conversations from it with the
/// random stream `dataset.loader.random_pool` of `seed`.
///
/// # Errors
/// A bad line, an empty pool, a directory without files.
pub fn load(
    path: &Path,
    ids: &mut SessionIds,
    entries: usize,
    seed: u64,
) -> Result<Dataset, LoadError> {
    let files = pool_files(path)?;
    let mut pools = Vec::with_capacity(files.len());
    for file in &files {
        pools.push(load_pool(file)?);
    }
    let mut rng = crate::workload::child_rng(Some(seed), "dataset.loader.random_pool");
    let mut conversations: Vec<Conversation> = (0..entries)
        .map(|_| Conversation {
            session_id: ids.next_id(),
            ..Conversation::default()
        })
        .collect();
    let mut merged: Vec<Record> = vec![Record::default(); entries];
    for pool in &pools {
        for record in &mut merged {
            let pick = &pool[rng.random_range(0..pool.len())];
            record.texts.extend(pick.texts.iter().cloned());
            // An `Arc` clone: the pool's media bytes are shared, never copied.
            record.media.extend(pick.media.iter().cloned());
        }
    }
    for (conv, record) in conversations.iter_mut().zip(merged) {
        conv.turns.push(Turn {
            content: Content::Texts(record.texts),
            media: record.media,
            ..Turn::default()
        });
    }
    Ok(Dataset {
        replay: false,
        conversations,
        default_sampling: Sampling::Shuffle,
    })
}

/// The pool files: `path` itself, or the files of the directory sorted by name.
fn pool_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let io = |e: std::io::Error| LoadError::file(path, LoadErrorKind::Io(e.to_string()));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    Ok(files)
}

/// One record of a pool: its texts and media.
#[derive(Clone, Debug, Default)]
struct Record {
    texts: Vec<String>,
    media: Vec<Media>,
}

/// One pool: the texts and media of each record of `file`.
fn load_pool(file: &Path) -> Result<Vec<Record>, LoadError> {
    let mut lines = JsonLines::open(file)?;
    let mut pool = Vec::new();
    while let Some((line, map)) = lines.next_object()? {
        let mut obj = Obj::new(Ctx { path: file, line }, "", map);
        // `image_uuids` is a `SingleTurn` field; AIPerf's `RandomPool` has none.
        if obj.has("image_uuids") {
            return Err(obj.err("image_uuids", LoadErrorKind::UnknownField));
        }
        let media = media(&mut obj, None)?;
        obj.check_fields(&["type", "text", "texts"])?;
        obj.type_tag("random_pool")?;
        // A record of media alone is one modality, as AIPerf allows.
        let texts = if !media.is_empty() && obj.lacks_text() {
            Vec::new()
        } else {
            texts(&mut obj)?
        };
        pool.push(Record { texts, media });
    }
    if pool.is_empty() {
        return Err(LoadError::file(file, LoadErrorKind::Empty));
    }
    Ok(pool)
}
