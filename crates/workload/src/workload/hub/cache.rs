//! Writing the Hugging Face hub cache as `huggingface_hub` writes it, so that its Python readers
//! (transformers, `hf_hub_download`, `try_to_load_from_cache`) and ringperf's own reader find the
//! same files:
//!
//! ```text
//! <cache>/CACHEDIR.TAG
//! <cache>/models--ORG--NAME/
//!   blobs/<etag>                               the file's bytes, named by its ETag
//!   snapshots/<commit>/<file> -> ../../blobs/<etag>   a relative symlink
//!   refs/<revision>                            the commit a branch or tag names (no newline)
//!   .no_exist/<commit>/<file>                  empty: the file is not in the repo at <commit>
//! ```
//!
//! Every file appears whole or not at all: it is written under a name unique to this writer in
//! the same directory and renamed into place, so a concurrent reader (another ringperf, a Python
//! tool) never sees half of one, and two writers of the same file both end with a whole one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The `CACHEDIR.TAG` huggingface_hub writes at the cache's root (the Cache Directory Tagging
/// convention, so backup tools skip the cache).
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by huggingface_hub.\n\
# For information about cache directory tags, see:\n\
#\thttps://bford.info/cachedir/\n";

/// The cache folder of a model repo: `models--ORG--NAME`.
pub fn folder_name(repo_id: &str) -> String {
    format!("models--{}", repo_id.replace('/', "--"))
}

/// Whether `name` can be one path component of the cache (a commit, an ETag): not empty, not
/// `.` or `..`, no separator, no NUL.
pub fn is_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Whether `rel` is a relative path made of [`is_component`] parts (a revision such as
/// `refs/pr/1`, a file name such as `dir/file.json`).
pub fn is_relative(rel: &str) -> bool {
    !rel.is_empty() && rel.split('/').all(is_component)
}

/// A name beside `path` unique to this writer: `<name>.<8 hex>.<suffix>`.
fn temp_beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = uuid::Uuid::new_v4().simple().to_string();
    path.with_file_name(format!("{name}.{}.{suffix}", &id[..8]))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
fn write_atomic(path: &Path, bytes: &[u8], suffix: &str) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_beside(path, suffix);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `CACHEDIR.TAG` at the cache's root unless it is there; a failure is ignored, as
/// huggingface_hub ignores it.
pub fn tag(root: &Path) {
    let path = root.join("CACHEDIR.TAG");
    if !path.exists() {
        let _ = std::fs::create_dir_all(root);
        let _ = std::fs::write(path, CACHEDIR_TAG);
    }
}

/// `refs/<revision>` names `commit`, unless the revision is that commit (a commit asked for by
/// its hash gets no ref). Left alone when it already says so.
///
/// # Errors
/// The ref cannot be written.
pub fn write_ref(repo: &Path, revision: &str, commit: &str) -> io::Result<()> {
    if revision == commit {
        return Ok(());
    }
    let path = repo.join("refs").join(revision);
    if std::fs::read_to_string(&path).is_ok_and(|c| c == commit) {
        return Ok(());
    }
    write_atomic(&path, commit.as_bytes(), "tmp")
}

/// `blobs/<etag>`, holding `bytes` (left alone when it is already there: a blob's name is its
/// content's).
///
/// # Errors
/// The blob cannot be written.
pub fn store_blob(repo: &Path, etag: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let path = repo.join("blobs").join(etag);
    if !path.is_file() {
        write_atomic(&path, bytes, "incomplete")?;
    }
    Ok(path)
}

/// `blobs/<etag>` is there already.
pub fn has_blob(repo: &Path, etag: &str) -> bool {
    repo.join("blobs").join(etag).is_file()
}

/// `snapshots/<commit>/<file>`, a relative symlink to `blobs/<etag>`; made under a temporary name
/// and renamed over whatever was there.
///
/// # Errors
/// The link cannot be made.
pub fn link(repo: &Path, commit: &str, file: &str, etag: &str) -> io::Result<PathBuf> {
    let pointer = repo.join("snapshots").join(commit).join(file);
    // From the pointer's directory up to the repo folder: `snapshots/<commit>` and one more
    // level per directory in `file`.
    let mut target = PathBuf::new();
    for _ in 0..(1 + file.split('/').count()) {
        target.push("..");
    }
    target.push("blobs");
    target.push(etag);
    if std::fs::read_link(&pointer).is_ok_and(|t| t == target) {
        return Ok(pointer);
    }
    if let Some(dir) = pointer.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_beside(&pointer, "tmp");
    std::os::unix::fs::symlink(&target, &tmp)?;
    let renamed = std::fs::rename(&tmp, &pointer);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.map(|()| pointer)
}

/// `.no_exist/<commit>/<file>`: an empty file saying the repo has no `file` at `commit`.
///
/// # Errors
/// The marker cannot be written.
pub fn mark_absent(repo: &Path, commit: &str, file: &str) -> io::Result<()> {
    let path = repo.join(".no_exist").join(commit).join(file);
    if path.is_file() {
        return Ok(());
    }
    write_atomic(&path, b"", "tmp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_huggingface_hub_writes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join(folder_name("acme/tok"));
        assert!(repo.ends_with("models--acme--tok"));
        let blob = store_blob(&repo, "e1", b"{}").unwrap();
        let p = link(&repo, "c1", "tokenizer.json", "e1").unwrap();
        assert_eq!(std::fs::read_link(&p).unwrap(), Path::new("../../blobs/e1"));
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
        assert_eq!(std::fs::read(blob).unwrap(), b"{}");
        let nested = link(&repo, "c1", "sub/t.json", "e1").unwrap();
        assert_eq!(std::fs::read(nested).unwrap(), b"{}");
        write_ref(&repo, "main", "c1").unwrap();
        write_ref(&repo, "c1", "c1").unwrap();
        write_ref(&repo, "refs/pr/1", "c2").unwrap();
        assert_eq!(
            std::fs::read_to_string(repo.join("refs/main")).unwrap(),
            "c1"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join("refs/refs/pr/1")).unwrap(),
            "c2"
        );
        assert!(!repo.join("refs/c1").exists());
        mark_absent(&repo, "c1", "special_tokens_map.json").unwrap();
        assert_eq!(
            std::fs::read(repo.join(".no_exist/c1/special_tokens_map.json")).unwrap(),
            b""
        );
        tag(dir.path());
        assert!(
            std::fs::read_to_string(dir.path().join("CACHEDIR.TAG"))
                .unwrap()
                .starts_with("Signature: 8a477f597d28d172789f06886806bc55\n")
        );
        // Nothing temporary is left behind.
        let mut left = Vec::new();
        let mut stack = vec![dir.path().to_owned()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with("tmp")
                    || p.to_string_lossy().ends_with("incomplete")
                {
                    left.push(p);
                }
            }
        }
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn names_that_would_leave_the_cache_are_not_components() {
        for bad in ["", ".", "..", "a/b", "a\\b", "a\0"] {
            assert!(!is_component(bad), "{bad:?}");
        }
        assert!(is_component("0123abcd"));
        assert!(is_relative("refs/pr/1"));
        for bad in ["", "/x", "x/", "a/../b", "a//b"] {
            assert!(!is_relative(bad), "{bad:?}");
        }
    }
}
