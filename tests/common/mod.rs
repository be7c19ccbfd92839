//! What the tests that run the binary on fixtures share: the fixtures' paths, and the binary in a
//! fixed environment.

pub mod colours;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

pub fn demo() -> String {
    root()
        .join("fixtures/clusters/demo.yaml")
        .display()
        .to_string()
}

/// `kubectl-sched` with a fixed environment: no colour from the environment, 80 columns.
pub fn sched() -> Command {
    let mut c = Command::cargo_bin("kubectl-sched").unwrap();
    c.env_remove("NO_COLOR")
        .env("COLUMNS", "80")
        .env("TERM", "xterm");
    c
}
