//! `deploy/`: the Kubernetes manifests carry the scale-out contract that docs/scale-out.md
//! describes (an Indexed Job of N shards with the shard environment, a merge Job over the same
//! volume), every `${VAR}` placeholder is listed in its file and documented, and
//! `deploy/local-shards.sh` is valid bash that runs N shards and merges them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = repo().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `deploy/k8s/*.yaml`, as (file name, text).
fn manifests() -> Vec<(String, String)> {
    let dir = repo().join("deploy/k8s");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "deploy/k8s holds the shard Job, the merge Job and the PVC"
    );
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&p).expect("manifest reads");
            (name, text)
        })
        .collect()
}

/// The names of the `${VAR}` placeholders in `text`, in order of first use.
fn placeholders(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        rest = &rest[at + 2..];
        let end = rest.find('}').expect("every ${ is closed");
        let name = &rest[..end];
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "placeholder `${{{name}}}` is not an upper-case variable name"
        );
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &rest[end + 1..];
    }
    out
}

/// The file's leading comment block (its first lines that start with `#`).
fn header(text: &str) -> String {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text without its comment lines: what Kubernetes reads.
fn body(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A value for each placeholder, as a user fills them in (docs/scale-out.md's kind walkthrough).
const SAMPLE: &[(&str, &str)] = &[
    ("RUN_NAME", "run1"),
    ("RINGPERF_IMAGE", "ringperf:dev"),
    ("SHARDS", "3"),
    ("START_AT", "2026-11-23T10:00:00Z"),
    ("SERVER_URL", "http://vllm.default.svc:8000"),
    ("MODEL", "Qwen/Qwen3-0.6B"),
    ("TOKENIZER", "builtin"),
    ("REQUEST_RATE", "600"),
    ("REQUEST_COUNT", "60000"),
    ("IO_DRIVER", "auto"),
    ("CPUS_PER_SHARD", "2"),
    ("MEMORY_PER_SHARD", "2Gi"),
    ("MERGE_MEMORY", "4Gi"),
    ("STORAGE_CLASS", "standard"),
    ("PVC_ACCESS_MODE", "ReadWriteOnce"),
    ("PVC_SIZE", "5Gi"),
];

/// What `envsubst` does with the placeholders listed: each `${VAR}` replaced by its value.
fn fill(text: &str) -> String {
    let mut out = text.to_string();
    for name in placeholders(text) {
        let value = SAMPLE
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no sample value for ${{{name}}}: add it to SAMPLE"))
            .1;
        out = out.replace(&format!("${{{name}}}"), value);
    }
    out
}

/// The one YAML document of a filled manifest.
fn load(name: &str, text: &str) -> Yaml {
    let mut docs = YamlLoader::load_from_str(&fill(text))
        .unwrap_or_else(|e| panic!("{name} is not valid YAML once filled: {e}"));
    assert_eq!(docs.len(), 1, "{name} holds one document");
    docs.remove(0)
}

fn manifest(file: &str) -> Yaml {
    let (name, text) = manifests()
        .into_iter()
        .find(|(n, _)| n == file)
        .unwrap_or_else(|| panic!("deploy/k8s/{file} is missing"));
    load(&name, &text)
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is a string, got {y:?}"))
}

fn strings(y: &Yaml, what: &str) -> Vec<String> {
    y.as_vec()
        .unwrap_or_else(|| panic!("{what} is a list, got {y:?}"))
        .iter()
        .map(|v| str_of(v, what).to_string())
        .collect()
}

fn the_container(job: &Yaml) -> &Yaml {
    let containers = job["spec"]["template"]["spec"]["containers"]
        .as_vec()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    &containers[0]
}

/// The pod's `/artifacts` mount: (claim name, sub-path).
fn artifacts_volume(pod_spec: &Yaml, container: &Yaml) -> (String, String) {
    let mount = container["volumeMounts"]
        .as_vec()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["mountPath"].as_str() == Some("/artifacts"))
        .expect("a volume mounted at /artifacts");
    let volume_name = str_of(&mount["name"], "volumeMounts.name");
    let volume = pod_spec["volumes"]
        .as_vec()
        .expect("volumes")
        .iter()
        .find(|v| v["name"].as_str() == Some(volume_name))
        .expect("the mounted volume is declared");
    let claim = str_of(&volume["persistentVolumeClaim"]["claimName"], "claimName").to_string();
    let sub_path = mount["subPath"].as_str().unwrap_or("").to_string();
    (claim, sub_path)
}

#[test]
fn every_manifest_is_one_kubernetes_object() {
    for (name, text) in manifests() {
        let doc = load(&name, &text);
        assert!(doc["apiVersion"].as_str().is_some(), "{name}: apiVersion");
        assert!(doc["kind"].as_str().is_some(), "{name}: kind");
        assert!(
            doc["metadata"]["name"].as_str().is_some(),
            "{name}: metadata.name"
        );
        assert!(
            !fill(&text).contains("${"),
            "{name}: a placeholder is left after filling"
        );
    }
}

#[test]
fn the_shard_job_is_an_indexed_job_of_n_shards() {
    let job = manifest("ringperf-shards.yaml");
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"]
        .as_i64()
        .expect("completions is an integer");
    assert_eq!(
        spec["parallelism"].as_i64(),
        Some(completions),
        "parallelism == completions"
    );
    assert_eq!(completions, 3, "both are ${{SHARDS}}");
    // A shard runs once: a retry would start after the shared instant.
    assert_eq!(spec["backoffLimitPerIndex"].as_i64(), Some(0));
    assert!(spec["backoffLimit"].as_i64().expect("backoffLimit") >= completions);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));

    let c = the_container(&job);
    assert_eq!(strings(&c["command"], "command"), ["ringperf"]);
    let args = strings(&c["args"], "args");
    assert_eq!(args[0], "profile");
    let artifact_dir = args
        .iter()
        .find_map(|a| a.strip_prefix("--artifact-dir="))
        .expect("--artifact-dir=DIR among the args");
    assert_eq!(artifact_dir, "/artifacts/shard-$(JOB_COMPLETION_INDEX)");
    assert!(args.iter().any(|a| a == "--ui=none"), "--ui=none: {args:?}");
    assert!(
        args.iter()
            .any(|a| a == "--url=http://vllm.default.svc:8000"),
        "{args:?}"
    );
    // The index comes from JOB_COMPLETION_INDEX; giving it too would fight the Job controller.
    assert!(
        !args.iter().any(|a| a.starts_with("--shard-index")),
        "{args:?}"
    );

    let env: Vec<(String, String)> = c["env"]
        .as_vec()
        .expect("env")
        .iter()
        .map(|e| {
            (
                str_of(&e["name"], "env.name").into(),
                str_of(&e["value"], "env.value").into(),
            )
        })
        .collect();
    let var = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(var("RINGPERF_SHARD_COUNT"), Some("3"));
    assert_eq!(var("RINGPERF_START_AT"), Some("2026-11-23T10:00:00Z"));
    assert_eq!(var("RINGPERF_IO_DRIVER"), Some("auto"));

    // Whole cores, requested and limited alike (Guaranteed QoS; one pinned worker per core).
    let res = &c["resources"];
    assert_eq!(res["requests"]["cpu"].as_str(), Some("2"));
    assert_eq!(res["requests"]["cpu"], res["limits"]["cpu"]);
    assert_eq!(res["requests"]["memory"], res["limits"]["memory"]);

    let pvc = manifest("pvc.yaml");
    assert_eq!(pvc["kind"].as_str(), Some("PersistentVolumeClaim"));
    let (claim, sub_path) = artifacts_volume(pod, c);
    assert_eq!(Some(claim.as_str()), pvc["metadata"]["name"].as_str());
    assert_eq!(
        sub_path, "run1",
        "each run has its own sub-directory of the volume"
    );
}

#[test]
fn the_merge_job_reads_the_shards_volume() {
    let shards = manifest("ringperf-shards.yaml");
    let merge = manifest("ringperf-merge.yaml");
    assert_eq!(merge["apiVersion"].as_str(), Some("batch/v1"));
    assert_eq!(merge["kind"].as_str(), Some("Job"));
    assert_eq!(
        merge["spec"]["template"]["spec"]["restartPolicy"].as_str(),
        Some("Never")
    );
    let c = the_container(&merge);
    assert_eq!(strings(&c["command"], "command"), ["ringperf"]);
    assert_eq!(
        strings(&c["args"], "args"),
        ["merge", "/artifacts", "--artifact-dir", "/artifacts/merged"]
    );
    assert_eq!(
        artifacts_volume(&merge["spec"]["template"]["spec"], c),
        artifacts_volume(&shards["spec"]["template"]["spec"], the_container(&shards)),
        "the same claim and sub-directory as the shards"
    );
    // The image both run is the same placeholder.
    assert_eq!(c["image"], the_container(&shards)["image"]);
}

#[test]
fn every_placeholder_is_listed_in_its_file_and_documented() {
    let doc = read("docs/scale-out.md");
    // The doc's envsubst list: `PLACEHOLDERS='${A} ${B} …'`, the only variables envsubst touches
    // (so Kubernetes' own $(JOB_COMPLETION_INDEX) is left alone).
    let line = doc
        .lines()
        .find_map(|l| l.trim().strip_prefix("PLACEHOLDERS='"))
        .expect("docs/scale-out.md sets PLACEHOLDERS='${…} …' for envsubst");
    let listed: BTreeSet<String> = placeholders(line).into_iter().collect();

    let mut used = BTreeSet::new();
    for (name, text) in manifests() {
        let in_header: BTreeSet<String> = placeholders(&header(&text)).into_iter().collect();
        let in_body: BTreeSet<String> = placeholders(&body(&text)).into_iter().collect();
        assert_eq!(
            in_header, in_body,
            "{name}: the header lists exactly the placeholders used"
        );
        for p in &in_body {
            assert!(
                doc.contains(&format!("| `${{{p}}}` |")),
                "{name}: ${{{p}}} has no row in docs/scale-out.md's placeholder table"
            );
        }
        used.extend(in_body);
        // Kubernetes expands $(VAR), envsubst only ${VAR}: the index must use the former.
        assert!(!text.contains("${JOB_COMPLETION_INDEX}"), "{name}");
    }
    assert_eq!(
        listed, used,
        "the doc's PLACEHOLDERS list is the manifests' placeholders"
    );

    // The Dockerfile's build arguments are documented too.
    let dockerfile = read("deploy/Dockerfile");
    for p in placeholders(&dockerfile) {
        assert!(
            header(&dockerfile).contains(&format!("${{{p}}}")),
            "Dockerfile header: ${p}"
        );
        assert!(
            doc.contains(&format!("`{p}`")),
            "docs/scale-out.md: build argument {p}"
        );
    }
}

#[test]
fn the_image_is_built_locked_in_release() {
    let dockerfile = read("deploy/Dockerfile");
    let froms = dockerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .count();
    assert_eq!(froms, 2, "a build stage and a runtime stage");
    assert!(dockerfile.contains("cargo build --release --locked"));
    assert!(dockerfile.contains("COPY --from=build"));
}

fn local_shards() -> Command {
    let mut c = Command::new("bash");
    c.arg(repo().join("deploy/local-shards.sh"));
    c
}

#[test]
fn local_shards_script_is_valid_bash() {
    let out = Command::new("bash")
        .arg("-n")
        .arg(repo().join("deploy/local-shards.sh"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn local_shards_refuses_what_it_sets_itself() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "usage"),
        (&["0"], "positive integer"),
        (&["two"], "positive integer"),
        (&["2", "--mock"], "one mock server per shard"),
        (&["2", "--shard-index", "1"], "set by the script"),
        (
            &["2", "--start-at=2026-11-23T10:00:00Z"],
            "set by the script",
        ),
    ];
    for (args, needle) in cases {
        let out = local_shards().args(*args).output().expect("bash runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?} should say `{needle}`: {err}"
        );
    }
}

/// `deploy/local-shards.sh 2` against the mock it starts: two shards, one merged report of the
/// whole run.
#[test]
fn local_shards_two_shards_merge_into_one_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = tmp.path().join("run");
    let out = local_shards()
        .args([
            "2",
            "--streaming",
            "--request-count",
            "40",
            "--request-rate",
            "200",
        ])
        .arg("--artifact-dir")
        .arg(&base)
        .env("RINGPERF_BIN", env!("CARGO_BIN_EXE_ringperf"))
        // A shard whose process starts after the instant refuses to run: 5 s of lead leaves
        // room for the debug binaries to start beside the other test binaries.
        .env("START_LEAD_MS", "5000")
        .current_dir(tmp.path())
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "local-shards.sh failed ({:?}): {err}",
        out.status
    );

    for i in 0..2 {
        let shard = base.join(format!("shard-{i}"));
        assert!(shard.join("shard.json").is_file(), "{}", shard.display());
        assert!(
            shard.join("profile_export_aiperf.json").is_file(),
            "{}",
            shard.display()
        );
    }
    let merged = base.join("merged/profile_export_aiperf.json");
    let text = std::fs::read_to_string(&merged)
        .unwrap_or_else(|e| panic!("{}: {e}; stderr: {err}", merged.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("merged JSON parses");
    assert_eq!(
        json["request_count"]["avg"].as_f64(),
        Some(40.0),
        "{}",
        json["request_count"]
    );
    let shards = json["ringperf"]["shards"]
        .as_array()
        .expect("ringperf.shards is a list");
    assert_eq!(shards.len(), 2, "{}", json["ringperf"]["shards"]);
    // Every other request each, and only shard 0 scraped the server.
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["index"].as_u64(), Some(i as u64), "{s}");
        assert_eq!(s["status"].as_str(), Some("ok"), "{s}");
        assert_eq!(s["request_count"].as_u64(), Some(20), "{s}");
        assert_eq!(s["server_metrics"].as_bool(), Some(i == 0), "{s}");
    }
    assert!(base.join("merged/server_metrics_export.json").is_file());
}
