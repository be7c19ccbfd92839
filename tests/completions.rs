//! The committed completion scripts must match what the flag definitions generate.
//! Regenerate with `UPDATE_COMPLETIONS=1 cargo test --test completions`.

use clap_complete::{Generator, Shell};
use std::path::Path;

#[test]
fn completions_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
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
