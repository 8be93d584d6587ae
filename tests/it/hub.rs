//! A tokenizer fetched from the Hugging Face Hub (docs/tokenizer.md, "Downloads"): a local
//! plain-HTTP Hub on loopback serves the file routes as huggingface.co does (`HEAD` and `GET` of
//! `/{repo}/resolve/{revision}/{file}` with `X-Repo-Commit`, `ETag` / `X-Linked-Etag`; an LFS
//! file's `302` to a CDN host; a renamed repo's relative `307`; `404 EntryNotFound` for a file the
//! repo lacks; `401 GatedRepo`), `HF_ENDPOINT` and `HF_HOME` point the binary at it and at a
//! temporary cache, and `ringperf profile --mock` runs with the model id as its tokenizer. Checked:
//! the token counts, the cache tree (exactly huggingface_hub's), the token sent where it belongs,
//! the offline second run from the cache alone, and each failure's message. The last test has
//! huggingface_hub itself read that cache and download the same files from the same Hub, and
//! compares the trees.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{read_jsonl, require_tool};

/// The word-level test tokenizer (tests/data/chat_template/): "hello , how are you today ?" is
/// 7 tokens.
const TOKENIZER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/chat_template/chatml"
);
const PROMPT: &str = "Hello, how are you today?";
const PROMPT_TOKENS: u64 = 7;
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const TOKEN: &str = "hf_test_token_1234";
/// The cache directory tag huggingface_hub writes at the cache's root.
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
    # This file is a cache directory tag created by huggingface_hub.\n\
    # For information about cache directory tags, see:\n\
    #\thttps://bford.info/cachedir/\n";

/// One request the Hub saw: method, path, `Authorization` (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    method: String,
    path: String,
    auth: Option<String>,
}

/// A file of the test repo: its bytes and the ETag the Hub gives it (the sha256 of an LFS file,
/// a git blob id otherwise).
struct File {
    bytes: Vec<u8>,
    etag: String,
}

/// The sha256 of `bytes`, in hex.
fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The git blob id of `bytes` (sha1 of `blob <len>\0` and the bytes), in hex.
fn git_blob_id(bytes: &[u8]) -> String {
    let mut data = format!("blob {}\0", bytes.len()).into_bytes();
    data.extend_from_slice(bytes);
    ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The repo's `tokenizer.json` (LFS: its bytes behind the CDN) and `tokenizer_config.json`
/// (a regular file, behind the renamed repo's redirect).
fn repo_files() -> (File, File) {
    let tj = std::fs::read(Path::new(TOKENIZER).join("tokenizer.json")).unwrap();
    let tc = std::fs::read(Path::new(TOKENIZER).join("tokenizer_config.json")).unwrap();
    (
        File {
            etag: sha256_hex(&tj),
            bytes: tj,
        },
        File {
            etag: git_blob_id(&tc),
            bytes: tc,
        },
    )
}

/// The local Hub: one thread answering one request per connection until stopped (dropped).
struct Hub {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Hub {
    fn start() -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (tj, tc) = repo_files();
        let thread = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(conn) = conn {
                        let _ = serve(conn, addr, &seen, &tj, &tc);
                    }
                }
            })
        };
        Hub {
            addr,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one request and answers it as the Hub would.
fn serve(
    conn: TcpStream,
    addr: SocketAddr,
    seen: &Mutex<Vec<Seen>>,
    tj: &File,
    tc: &File,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut auth = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("authorization")
        {
            auth = Some(v.trim().to_owned());
        }
    }
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        path: path.clone(),
        auth,
    });
    let commit = ("X-Repo-Commit", COMMIT.to_owned());
    let entry_missing = [commit.clone(), ("X-Error-Code", "EntryNotFound".to_owned())];
    let (status, headers, body): (&str, Vec<(&str, String)>, &[u8]) = match path.as_str() {
        // A renamed repo: a relative redirect to its new name (same host, followed).
        p if p.starts_with("/acme/tok/resolve/") && p.ends_with("/tokenizer_config.json") => (
            "307 Temporary Redirect",
            vec![(
                "Location",
                p.replacen("/acme/tok/", "/acme/tok-renamed/", 1),
            )],
            b"",
        ),
        p if p.starts_with("/acme/tok-renamed/resolve/")
            && p.ends_with("/tokenizer_config.json") =>
        {
            (
                "200 OK",
                vec![commit.clone(), ("ETag", format!("\"{}\"", tc.etag))],
                &tc.bytes,
            )
        }
        // An LFS file: the metadata on the redirect, the bytes on another host (the CDN).
        p if p.starts_with("/acme/tok/resolve/") && p.ends_with("/tokenizer.json") => (
            "302 Found",
            vec![
                commit.clone(),
                ("X-Linked-Etag", format!("\"{}\"", tj.etag)),
                ("X-Linked-Size", tj.bytes.len().to_string()),
                ("ETag", "\"a-git-pointer-id\"".to_owned()),
                (
                    "Location",
                    format!("http://localhost:{}/cdn/{}?sig=x%2Fy", addr.port(), tj.etag),
                ),
            ],
            b"",
        ),
        p if p.starts_with("/cdn/") => (
            "200 OK",
            vec![("ETag", format!("\"{}\"", tj.etag))],
            &tj.bytes,
        ),
        // A repo without the file (`acme/slow` has no tokenizer.json at all).
        p if p.starts_with("/acme/tok/resolve/") || p.starts_with("/acme/slow/resolve/") => {
            ("404 Not Found", entry_missing.to_vec(), b"Entry not found")
        }
        p if p.starts_with("/acme/gated/") => (
            "401 Unauthorized",
            vec![
                ("X-Error-Code", "GatedRepo".to_owned()),
                (
                    "X-Error-Message",
                    "Access to model acme/gated is restricted.".to_owned(),
                ),
            ],
            b"",
        ),
        _ => (
            "404 Not Found",
            vec![("X-Error-Code", "RepoNotFound".to_owned())],
            b"Repository not found",
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut w = conn;
    w.write_all(out.as_bytes())?;
    if method == "GET" {
        w.write_all(body)?;
    }
    w.flush()
}

/// `ringperf profile --mock` with `tokenizer` as the model id and its tokenizer, three requests
/// of [`PROMPT`], `HF_HOME` at `home`, `env` (the Hub's endpoint, a token, offline mode) and
/// the `extra` flags.
fn profile(
    home: &Path,
    out: &Path,
    tokenizer: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Output {
    std::fs::create_dir_all(out).unwrap();
    let input = out.join("prompts.jsonl");
    std::fs::write(&input, format!("{{\"text\": \"{PROMPT}\"}}\n").repeat(3)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("HF_HOME", home)
        .env_remove("HF_HUB_CACHE")
        .env_remove("HUGGINGFACE_HUB_CACHE")
        .env_remove("HF_TOKEN")
        .env_remove("HUGGING_FACE_HUB_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("TRANSFORMERS_OFFLINE")
        .env_remove("HF_ENDPOINT")
        .envs(env.iter().copied())
        .args([
            "profile",
            "--mock",
            "-m",
            tokenizer,
            "--tokenizer",
            tokenizer,
        ])
        .args(["--endpoint-type", "chat", "--ui-type", "none"])
        .args(["--request-count", "3", "--workers-max", "1"])
        .args(["--no-server-metrics", "--no-gpu-telemetry"])
        .args(["--custom-dataset-type", "single_turn", "--input-file"])
        .arg(&input)
        .arg("--artifact-dir")
        .arg(out.join("run"))
        .args(extra)
        .output()
        .expect("the binary runs")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A setup error (exit 2); its stderr.
fn setup_error(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

fn isls(out: &Path) -> Vec<u64> {
    read_jsonl(&out.join("run/profile_export.jsonl"))
        .iter()
        .map(|r| {
            r["metrics"]["input_sequence_length"]["value"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// Every entry under `root`, by its path relative to `root`: `dir`, `link -> TARGET`, or
/// `file <sha256>`. Entries whose path contains a part in `skip` are left out.
fn tree(root: &Path, skip: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel.split('/').any(|part| skip.contains(&part)) {
                continue;
            }
            let ft = e.file_type().unwrap();
            let what = if ft.is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p.clone());
                "dir".to_owned()
            } else {
                format!("file {}", sha256_hex(&std::fs::read(&p).unwrap()))
            };
            out.insert(rel, what);
        }
    }
    out
}

/// The cache huggingface_hub leaves after fetching the tokenizer files of `acme/tok` from the
/// local Hub (`.locks` aside, which ringperf does not take).
fn expected_tree() -> BTreeMap<String, String> {
    let (tj, tc) = repo_files();
    let empty = sha256_hex(b"");
    let m = "models--acme--tok";
    [
        (
            "CACHEDIR.TAG".to_owned(),
            format!("file {}", sha256_hex(CACHEDIR_TAG.as_bytes())),
        ),
        (m.to_owned(), "dir".to_owned()),
        (format!("{m}/.no_exist"), "dir".to_owned()),
        (format!("{m}/.no_exist/{COMMIT}"), "dir".to_owned()),
        (
            format!("{m}/.no_exist/{COMMIT}/chat_template.jinja"),
            format!("file {empty}"),
        ),
        (
            format!("{m}/.no_exist/{COMMIT}/special_tokens_map.json"),
            format!("file {empty}"),
        ),
        (format!("{m}/blobs"), "dir".to_owned()),
        (
            format!("{m}/blobs/{}", tj.etag),
            format!("file {}", sha256_hex(&tj.bytes)),
        ),
        (
            format!("{m}/blobs/{}", tc.etag),
            format!("file {}", sha256_hex(&tc.bytes)),
        ),
        (format!("{m}/refs"), "dir".to_owned()),
        (
            format!("{m}/refs/main"),
            format!("file {}", sha256_hex(COMMIT.as_bytes())),
        ),
        (format!("{m}/snapshots"), "dir".to_owned()),
        (format!("{m}/snapshots/{COMMIT}"), "dir".to_owned()),
        (
            format!("{m}/snapshots/{COMMIT}/tokenizer.json"),
            format!("link -> ../../blobs/{}", tj.etag),
        ),
        (
            format!("{m}/snapshots/{COMMIT}/tokenizer_config.json"),
            format!("link -> ../../blobs/{}", tc.etag),
        ),
    ]
    .into_iter()
    .collect()
}

/// A model id not in the cache is fetched from the Hub (the token sent to the Hub, never to the
/// CDN), counted with, and cached as huggingface_hub caches it; a second run, offline with the
/// Hub gone, reads the cache alone.
#[test]
fn a_model_id_is_fetched_from_the_hub_into_the_cache_and_reused_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("hf");
    let hub = Hub::start();
    let endpoint = hub.endpoint();
    let first = tmp.path().join("first");
    let out = profile(
        &home,
        &first,
        "acme/tok",
        &[("HF_ENDPOINT", &endpoint), ("HF_TOKEN", TOKEN)],
        &[],
    );
    ok(&out);
    assert_eq!(isls(&first), vec![PROMPT_TOKENS; 3]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fetching its files from"), "{err}");

    // The requests: each file's HEAD (the renamed repo's redirect followed), the two GETs (the
    // LFS one on the CDN), the later files at the commit the first one named.
    let seen = hub.seen();
    let paths: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    let (tj, _) = repo_files();
    let at = |f: &str| format!("/acme/tok/resolve/{COMMIT}/{f}");
    let renamed = format!("/acme/tok-renamed/resolve/{COMMIT}/tokenizer_config.json");
    assert_eq!(
        paths,
        vec![
            "HEAD /acme/tok/resolve/main/tokenizer.json".to_owned(),
            format!("GET /cdn/{}?sig=x%2Fy", tj.etag),
            format!("HEAD {}", at("tokenizer_config.json")),
            format!("HEAD {renamed}"),
            format!("GET {renamed}"),
            format!("HEAD {}", at("special_tokens_map.json")),
            format!("HEAD {}", at("chat_template.jinja")),
        ]
    );
    let bearer = format!("Bearer {TOKEN}");
    for s in &seen {
        let want = (!s.path.starts_with("/cdn/")).then_some(bearer.as_str());
        assert_eq!(s.auth.as_deref(), want, "{s:?}");
    }

    let cache = home.join("hub");
    assert_eq!(tree(&cache, &[]), expected_tree());

    // Offline, the Hub stopped: the cache alone.
    drop(hub);
    let second = tmp.path().join("second");
    let out = profile(&home, &second, "acme/tok", &[("HF_HUB_OFFLINE", "1")], &[]);
    ok(&out);
    assert_eq!(isls(&second), vec![PROMPT_TOKENS; 3]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("fetching"));
    assert_eq!(tree(&cache, &[]), expected_tree());
}

/// Offline with an empty cache, a gated repo without a token, a repo that does not exist, a Hub
/// that cannot be reached: each a setup error saying so, nothing left in the cache but what
/// huggingface_hub would leave.
#[test]
fn hub_failures_are_setup_errors_that_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("hf");
    let hub = Hub::start();
    let endpoint = hub.endpoint();
    let env = [("HF_ENDPOINT", endpoint.as_str())];

    let offline = [("HF_ENDPOINT", endpoint.as_str()), ("HF_HUB_OFFLINE", "1")];
    let err = setup_error(&profile(
        &home,
        &tmp.path().join("a"),
        "acme/tok",
        &offline,
        &[],
    ));
    assert!(
        err.contains(
            "tokenizer \"acme/tok\" (revision \"main\") is not in the local Hugging Face cache"
        ),
        "{err}"
    );
    assert!(err.contains("offline mode is on"), "{err}");
    assert!(hub.seen().is_empty(), "{:?}", hub.seen());

    let err = setup_error(&profile(
        &home,
        &tmp.path().join("b"),
        "acme/gated",
        &env,
        &[],
    ));
    assert!(err.contains("answered 401"), "{err}");
    assert!(
        err.contains("the repository is gated and no token was sent"),
        "{err}"
    );
    assert!(err.contains("set HF_TOKEN"), "{err}");

    let err = setup_error(&profile(
        &home,
        &tmp.path().join("c"),
        "acme/none",
        &env,
        &[],
    ));
    assert!(err.contains("answered 404"), "{err}");
    assert!(err.contains("the repository does not exist"), "{err}");

    // A repo without tokenizer.json (at a tag): said so; its absence marked, the tag's ref
    // written, as huggingface_hub leaves them.
    let err = setup_error(&profile(
        &home,
        &tmp.path().join("e"),
        "acme/slow",
        &env,
        &["--tokenizer-revision", "v1.0"],
    ));
    assert!(
        err.contains(&format!(
            "the Hub's acme/slow has no tokenizer.json at revision \"v1.0\" (commit {COMMIT})"
        )),
        "{err}"
    );
    let slow = home.join("hub/models--acme--slow");
    assert_eq!(
        std::fs::read_to_string(slow.join("refs/v1.0")).unwrap(),
        COMMIT
    );
    assert!(
        slow.join(".no_exist")
            .join(COMMIT)
            .join("tokenizer.json")
            .is_file()
    );
    assert!(!slow.join("snapshots").exists());
    assert!(
        hub.seen()
            .iter()
            .any(|s| s.path == "/acme/slow/resolve/v1.0/tokenizer.json"),
        "{:?}",
        hub.seen()
    );

    // Nothing is cached for a refused fetch.
    let cache = home.join("hub");
    assert!(!cache.join("models--acme--gated").exists());
    assert!(!cache.join("models--acme--none").exists());

    // A Hub that is not there: the URL that failed and the way out.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let unreachable = [("HF_ENDPOINT", format!("http://{closed}"))];
    let unreachable: Vec<(&str, &str)> =
        unreachable.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let err = setup_error(&profile(
        &home,
        &tmp.path().join("d"),
        "acme/tok",
        &unreachable,
        &[],
    ));
    assert!(
        err.contains(&format!(
            "cannot fetch http://{closed}/acme/tok/resolve/main/tokenizer.json"
        )),
        "{err}"
    );
    assert!(err.contains("HF_HUB_OFFLINE=1"), "{err}");
}

/// The Python with huggingface_hub: `$RINGPERF_HF_PYTHON`, else target/ci-venv/bin/python (`.ci/run`
/// installs it there), else python3.
fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RINGPERF_HF_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-venv/bin/python")),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import huggingface_hub"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// What huggingface_hub does with ringperf's cache and with the same Hub: it finds every file
/// ringperf wrote (and the absences it marked) offline, and its own download of the same files
/// into an empty cache leaves the same tree (its `.locks` aside).
#[test]
fn huggingface_hub_reads_the_cache_ringperf_wrote_and_writes_the_same() {
    let Some(py) = python() else {
        require_tool(
            "python3 with huggingface_hub",
            false,
            "skipped: no Python with huggingface_hub (set RINGPERF_HF_PYTHON)",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let hub = Hub::start();
    let endpoint = hub.endpoint();
    let ours = tmp.path().join("ringperf-hf");
    ok(&profile(
        &ours,
        &tmp.path().join("run"),
        "acme/tok",
        &[("HF_ENDPOINT", &endpoint)],
        &[],
    ));

    let script = r#"
import json, os, sys
from huggingface_hub import hf_hub_download, try_to_load_from_cache
from huggingface_hub.file_download import _CACHED_NO_EXIST
from huggingface_hub.errors import EntryNotFoundError
files = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"]
out = {}
if sys.argv[1] == "offline":
    for f in files:
        found = try_to_load_from_cache("acme/tok", f)
        if found is _CACHED_NO_EXIST:
            out[f] = "absent"
            continue
        local = hf_hub_download("acme/tok", f, local_files_only=True)
        assert local == found, (local, found)
        out[f] = open(local, "rb").read().decode()
else:
    for f in files:
        try:
            out[f] = open(hf_hub_download("acme/tok", f), "rb").read().decode()
        except EntryNotFoundError:
            out[f] = "absent"
print(json.dumps(out, sort_keys=True))
"#;
    let run_py = |home: &Path, mode: &str, env: &[(&str, &str)]| -> serde_json::Value {
        let out = Command::new(&py)
            .args(["-c", script, mode])
            .env("HF_HOME", home)
            .env_remove("HF_HUB_CACHE")
            .env_remove("HUGGINGFACE_HUB_CACHE")
            .env_remove("HF_TOKEN")
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env("HF_HUB_DISABLE_XET", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (tj, tc) = repo_files();
    let want = serde_json::json!({
        "tokenizer.json": String::from_utf8(tj.bytes).unwrap(),
        "tokenizer_config.json": String::from_utf8(tc.bytes).unwrap(),
        "special_tokens_map.json": "absent",
        "chat_template.jinja": "absent",
    });
    let read = run_py(&ours, "offline", &[("HF_HUB_OFFLINE", "1")]);
    assert_eq!(read, want);

    let theirs = tmp.path().join("python-hf");
    let fetched = run_py(&theirs, "online", &[("HF_ENDPOINT", &endpoint)]);
    assert_eq!(fetched, want);
    assert_eq!(
        tree(&theirs.join("hub"), &[".locks"]),
        tree(&ours.join("hub"), &[])
    );
    assert_eq!(tree(&ours.join("hub"), &[]), expected_tree());
}
