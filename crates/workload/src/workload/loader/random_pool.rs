//! `random_pool`: a file, or a directory whose every file is one pool, of records with texts
//! (`text`/`texts`) and media (`image`/`images`, `audio`/`audios`, `video`/`videos`, read as
//! `single_turn` reads them, files relative to the pool file) (AIPerf's `RandomPool`; no timing,
//! sessions or lengths). The dataset is `entries` conversations of one turn; conversation `i`'s
//! turn joins the texts and media of one record drawn at random, with replacement, from each
//! pool (pools in file-name order). Default sampling: shuffle.

use std::path::{Path, PathBuf};

use rand::RngExt;

use ringperf_wire::conversation::{Content, Conversation, Dataset, Media, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj, media, texts};
use super::lines::JsonLines;
use super::session::SessionIds;

/// Items per turn of each modality (`--prompt-batch-size`, `--image-batch-size`,
/// `--audio-batch-size`, `--video-batch-size`); all 1 by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolBatch {
    pub text: usize,
    pub image: usize,
    pub audio: usize,
    pub video: usize,
}

impl Default for PoolBatch {
    fn default() -> Self {
        Self {
            text: 1,
            image: 1,
            audio: 1,
            video: 1,
        }
    }
}

/// Loads a `random_pool` file or directory and draws `entries` conversations from it with the
/// random stream `dataset.loader.random_pool` of `seed`. A batch size other than 1 on a
/// modality the pool has draws each turn's items of every modality independently from one flat
/// pool per modality ([`batched`]), as AIPerf's `RandomPool` does.
///
/// # Errors
/// A bad line, an empty pool, a directory without files; batching over several named pools or
/// over entries with named objects or image UUIDs, or batch sizes that leave turns empty.
pub fn load(
    path: &Path,
    ids: &mut SessionIds,
    entries: usize,
    seed: u64,
    batch: PoolBatch,
) -> Result<Dataset, LoadError> {
    let files = pool_files(path)?;
    let mut pools = Vec::with_capacity(files.len());
    let mut names = Vec::with_capacity(files.len());
    for file in &files {
        pools.push(load_pool(JsonLines::open(file)?, file)?);
        names.extend(file.file_name().map(|n| n.to_string_lossy().into_owned()));
    }
    draw_all(path, &names, &pools, ids, entries, seed, batch)
}

/// A config file's inline `records` of format `random_pool`, named `name` in messages: one
/// pool (a list) or several (a dict of lists, each `(key, its records as JSON lines)` in the
/// dict's order), drawn as [`load`] draws a file's or a directory's.
///
/// # Errors
/// As [`load`].
pub fn load_inline(
    name: &Path,
    pools: &[(String, String)],
    ids: &mut SessionIds,
    entries: usize,
    seed: u64,
    batch: PoolBatch,
) -> Result<Dataset, LoadError> {
    let mut read = Vec::with_capacity(pools.len());
    for (pool, jsonl) in pools {
        let at = name.join(pool);
        let lines = JsonLines::new(&at, std::io::Cursor::new(jsonl.as_bytes()));
        read.push(load_pool(lines, &at)?);
    }
    let names: Vec<String> = pools.iter().map(|(n, _)| n.clone()).collect();
    draw_all(name, &names, &read, ids, entries, seed, batch)
}

/// `entries` conversations from `pools` (named `names`, in their order), as [`load`] says.
fn draw_all(
    path: &Path,
    names: &[String],
    pools: &[Vec<Record>],
    ids: &mut SessionIds,
    entries: usize,
    seed: u64,
    batch: PoolBatch,
) -> Result<Dataset, LoadError> {
    let mut rng = crate::workload::child_rng(Some(seed), "dataset.loader.random_pool");
    if batching_requested(pools, batch) {
        return batched(path, names, pools, ids, entries, batch, &mut rng);
    }
    let mut conversations: Vec<Conversation> = (0..entries)
        .map(|_| Conversation {
            session_id: ids.next_id(),
            ..Conversation::default()
        })
        .collect();
    let mut merged: Vec<Record> = vec![Record::default(); entries];
    for pool in pools {
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
    /// Its `texts` / `images` / `audios` / `videos` hold an object with a `name` or `uuids`
    /// (which batching would drop, as AIPerf refuses it).
    named: bool,
}

/// Which of a record's media are of `kind` (0 image, 1 audio, 2 video).
fn kind_of(m: &Media) -> usize {
    match m {
        Media::Image(_) | Media::ImageUuid { .. } => 0,
        Media::Audio(_) => 1,
        Media::Video(_) => 2,
    }
}

/// A batch size other than 1 on a modality some record of the pools has.
fn batching_requested(pools: &[Vec<Record>], batch: PoolBatch) -> bool {
    let records = || pools.iter().flatten();
    (batch.text != 1 && records().any(|r| !r.texts.is_empty()))
        || [batch.image, batch.audio, batch.video]
            .into_iter()
            .enumerate()
            .any(|(k, b)| b != 1 && records().any(|r| r.media.iter().any(|m| kind_of(m) == k)))
}

/// AIPerf's batched `RandomPool`: one flat pool per modality (every record's items, in file
/// order), and per conversation one turn of `batch` items of each modality present, drawn with
/// replacement (images, then texts, audio and video, as AIPerf draws them).
fn batched(
    path: &Path,
    names: &[String],
    pools: &[Vec<Record>],
    ids: &mut SessionIds,
    entries: usize,
    batch: PoolBatch,
    rng: &mut rand::rngs::StdRng,
) -> Result<Dataset, LoadError> {
    let invalid = |why: String| Err(LoadError::file(path, LoadErrorKind::Invalid(why)));
    if names.len() > 1 {
        let mut sorted = names.to_vec();
        sorted.sort();
        return invalid(format!(
            "random_pool batch sizes other than 1 are not supported for named pools (found \
             {}: {}). Drop the batch-size flags, or use a single unnamed pool -- one file, or a \
             flat inline records: list.",
            names.len(),
            sorted.join(", ")
        ));
    }
    if pools.iter().flatten().any(|r| r.named) {
        return invalid(
            "random_pool batch sizes other than 1 are not supported when pool entries carry \
             named Text/Image/Audio/Video objects or image cache uuids. Drop the batch-size \
             flags, or strip name/uuids from the entries if only their contents matter."
                .into(),
        );
    }
    let texts: Vec<&String> = pools.iter().flatten().flat_map(|r| &r.texts).collect();
    let media: [Vec<&Media>; 3] = std::array::from_fn(|k| {
        pools
            .iter()
            .flatten()
            .flat_map(|r| r.media.iter().filter(move |m| kind_of(m) == k))
            .collect()
    });
    let [images, audios, videos] = &media;
    let takes = |len: usize, b: usize| len > 0 && b > 0;
    if !(takes(images.len(), batch.image)
        || takes(texts.len(), batch.text)
        || takes(audios.len(), batch.audio)
        || takes(videos.len(), batch.video))
    {
        return invalid(format!(
            "random_pool batch sizes produce turns with no content: every modality is absent \
             from the pool or has batch size 0 (text={}, image={}, audio={}, video={}). Set a \
             batch size above 0 for a modality that is present in the pool.",
            batch.text, batch.image, batch.audio, batch.video
        ));
    }
    // `b` draws with replacement from `from` (none when it is empty or `b` is 0).
    fn draw<T: Clone>(rng: &mut rand::rngs::StdRng, from: &[&T], b: usize) -> Vec<T> {
        if from.is_empty() {
            return Vec::new();
        }
        (0..b)
            .map(|_| from[rng.random_range(0..from.len())].clone())
            .collect()
    }
    let mut conversations = Vec::with_capacity(entries);
    for _ in 0..entries {
        // An `Arc` clone: the pool's media bytes are shared, never copied.
        let mut turn_media = draw(rng, images, batch.image);
        let turn_texts = draw(rng, &texts, batch.text);
        turn_media.extend(draw(rng, audios, batch.audio));
        turn_media.extend(draw(rng, videos, batch.video));
        conversations.push(Conversation {
            session_id: ids.next_id(),
            turns: vec![Turn {
                content: Content::Texts(turn_texts),
                media: turn_media,
                ..Turn::default()
            }],
            ..Conversation::default()
        });
    }
    Ok(Dataset {
        replay: false,
        conversations,
        default_sampling: Sampling::Shuffle,
    })
}

/// A record's `texts` / `images` / `audios` / `videos` hold an object with a non-empty
/// `name` or `uuids`.
fn carries_metadata(map: &serde_json::Map<String, serde_json::Value>) -> bool {
    ["texts", "images", "audios", "videos"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(serde_json::Value::as_array))
        .flatten()
        .any(|item| {
            item.get("name")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|n| !n.is_empty())
                || item
                    .get("uuids")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|u| !u.is_empty())
        })
}

/// One pool: the texts and media of each record of `lines` (the file `file`, or inline records
/// named so).
fn load_pool<R: std::io::BufRead>(
    mut lines: JsonLines<R>,
    file: &Path,
) -> Result<Vec<Record>, LoadError> {
    let mut pool = Vec::new();
    while let Some((line, map)) = lines.next_object()? {
        let named = carries_metadata(&map);
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
        pool.push(Record {
            texts,
            media,
            named,
        });
    }
    if pool.is_empty() {
        return Err(LoadError::file(file, LoadErrorKind::Empty));
    }
    Ok(pool)
}
