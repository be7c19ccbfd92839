//! Completion: the committed scripts are what `kubectl-sched completions SHELL` prints (regenerate
//! with `UPDATE_COMPLETIONS=1 cargo test --test completions`), the bash script completes names
//! from a snapshot when bash runs it, and the `kubectl_complete-sched_*` binaries answer kubectl
//! in cobra's format.

use clap_complete::{Generator, Shell};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn completions_are_up_to_date() {
    let dir = root().join("completions");
    let update = std::env::var_os("UPDATE_COMPLETIONS").is_some();
    let mut stale = Vec::new();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
        let path = dir.join(shell.file_name("kubectl-sched"));
        let generated = kubectl_sched::app::completions(shell);
        if update {
            std::fs::write(&path, &generated).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(generated.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale completion scripts: {}\nregenerate them with: UPDATE_COMPLETIONS=1 cargo test --test completions",
        stale.join(", ")
    );
}

/// What the committed bash script offers for the last of `words`, run by bash with the binary
/// under test on the PATH, in the repository's directory.
fn bash_candidates(words: &[&str]) -> Vec<String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_kubectl-sched"))
        .parent()
        .unwrap()
        .to_path_buf();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let current = words.last().unwrap();
    let previous = words[words.len() - 2];
    let script = format!(
        "source completions/kubectl-sched.bash
COMP_WORDS=({})
COMP_CWORD={}
COMP_TYPE=9
_clap_complete_kubectl_sched kubectl-sched '{current}' '{previous}'
printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        quoted.join(" "),
        words.len() - 1
    );
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(root())
        .env("PATH", path)
        .env_remove("KUBECONFIG")
        .output()
        .expect("bash runs the completion script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

const DEMO: &str = "fixtures/clusters/demo.yaml";

#[test]
fn bash_completes_names_from_the_snapshot_on_the_line() {
    let nodes = [
        "cp-1",
        "gpu-b1",
        "worker-a1",
        "worker-a2",
        "worker-b1",
        "worker-b2",
    ];
    // The words after `kubectl-sched`, the last being completed, and what bash offers.
    let cases: [(&[&str], &[&str]); 14] = [
        (&["whatif", "--snapshot", DEMO, "--drain", ""], &nodes),
        (
            &["whatif", "--snapshot", DEMO, "--cordon", "worker-a"],
            &["worker-a1", "worker-a2"],
        ),
        (
            &["whatif", "--snapshot", DEMO, "--taint", "gpu"],
            &["gpu-b1="],
        ),
        (
            &["explain", "--snapshot", DEMO, "-n", ""],
            &["batch", "default", "kube-system", "shop"],
        ),
        (
            &["explain", "-n", "shop", "--snapshot", DEMO, "search"],
            &["search-indexer-7c9d5"],
        ),
        (
            &["explain", "--snapshot", DEMO, "shop/web-5d8c7b9f4-k"],
            &["shop/web-5d8c7b9f4-k2x8p"],
        ),
        (&["lease", "--snapshot", DEMO, "kube-"], &["kube-scheduler"]),
        (
            &["whatif", "--scheduler-version", "1.3"],
            &["1.34", "1.35", "1.36", "1.37"],
        ),
        (
            &["whatif", "-o", ""],
            &["table", "wide", "json", "yaml", "name"],
        ),
        (&["explain", "--color", "a"], &["auto", "always"]),
        // File flags complete file names; others do not.
        (
            &["whatif", "--snapshot", "fixtures/clusters/de"],
            &["fixtures/clusters/demo.yaml"],
        ),
        (
            &["whatif", "-f", "fixtures/pods/checkout"],
            &["fixtures/pods/checkout-critical.yaml"],
        ),
        (&["whatif", "--snapshot", DEMO, "--drain", "Cargo"], &[]),
        (&["whatif", "--scheduler-version", "Cargo"], &[]),
    ];
    for (words, expected) in cases {
        let line = [&["kubectl-sched"][..], words].concat();
        assert_eq!(bash_candidates(&line), expected, "{words:?}");
    }
    // Where kubectl-sched offers nothing, bash must not fall back to file names.
    let spec = Command::new("bash")
        .arg("-c")
        .arg("source completions/kubectl-sched.bash; complete -p kubectl-sched")
        .current_dir(root())
        .output()
        .unwrap();
    let spec = String::from_utf8(spec.stdout).unwrap();
    assert!(spec.contains("-F _clap_complete_kubectl_sched"), "{spec}");
    assert!(!spec.contains("default"), "{spec}");
}

/// What `kubectl_complete-sched_<plugin>` prints for these words.
fn kubectl_asks(plugin: &str, words: &[&str]) -> (Vec<String>, String) {
    let bin = match plugin {
        "whatif" => env!("CARGO_BIN_EXE_kubectl_complete-sched_whatif"),
        "explain" => env!("CARGO_BIN_EXE_kubectl_complete-sched_explain"),
        _ => env!("CARGO_BIN_EXE_kubectl_complete-sched_lease"),
    };
    let out = Command::new(bin)
        .args(words)
        .current_dir(root())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let directive = lines.pop().expect("a directive line");
    assert!(
        directive.starts_with(':') && directive[1..].parse::<u8>().is_ok(),
        "{text}"
    );
    (lines, directive)
}

#[test]
fn kubectl_plugin_completion_speaks_cobras_format() {
    // Names: no file completion (directive 4, ShellCompDirectiveNoFileComp).
    assert_eq!(
        kubectl_asks("whatif", &["--snapshot", DEMO, "--drain", "worker-b"]),
        (vec!["worker-b1".into(), "worker-b2".into()], ":4".into())
    );
    assert_eq!(
        kubectl_asks("explain", &["--snapshot", DEMO, "-n", "shop", "pod/search"]),
        (vec!["pod/search-indexer-7c9d5".into()], ":4".into())
    );
    // NODE=…: no space after the candidate (2 | 4).
    assert_eq!(
        kubectl_asks("whatif", &["--snapshot", DEMO, "--clone-node", "cp"]),
        (vec!["cp-1=".into()], ":6".into())
    );
    assert_eq!(
        kubectl_asks("lease", &["--snapshot", DEMO, ""]),
        (vec!["kube-scheduler".into()], ":4".into())
    );
    // A file flag: no candidates and the default directive, so the shell completes files.
    assert_eq!(
        kubectl_asks("whatif", &["--snapshot", DEMO, "-f", ""]),
        (vec![], ":0".into())
    );
    assert_eq!(
        kubectl_asks("explain", &["--kubeconfig", ""]),
        (vec![], ":0".into())
    );
    // Flags when the word starts like one, each with its help after a tab.
    let (flags, directive) = kubectl_asks("lease", &["--node"]);
    assert_eq!(directive, ":4");
    assert_eq!(flags.len(), 2, "{flags:?}");
    assert!(
        flags[0].starts_with("--nodes\tNode heartbeat leases"),
        "{flags:?}"
    );
    assert!(flags[1].starts_with("--node-grace-period\t"), "{flags:?}");
    // No flags for a word that does not start like one.
    let (values, _) = kubectl_asks("whatif", &["-o", ""]);
    assert_eq!(values.iter().filter(|v| v.starts_with('-')).count(), 0);
    assert!(values.iter().any(|v| v.starts_with("json")), "{values:?}");
}
