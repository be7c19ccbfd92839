//! Shared by the integration tests that talk to a (fake) API server or scheduler extender: the
//! servers themselves, and helpers to write kubeconfigs and run the binaries against them.
#![allow(dead_code)]

pub mod apiserver;
pub mod extender;

use apiserver::ApiServer;
use std::path::{Path, PathBuf};
use std::process::Output;

/// How a kubeconfig user authenticates.
#[derive(Clone, Debug)]
pub enum Credentials {
    None,
    Token(String),
    /// Client certificate and key, PEM.
    Cert(String, String),
    /// An exec credential plugin: the command and its arguments.
    Exec(String, Vec<String>),
}

/// One context of a kubeconfig file.
#[derive(Clone, Debug)]
pub struct ContextSpec {
    pub name: String,
    pub server: String,
    pub ca_pem: String,
    pub namespace: Option<String>,
    pub user: String,
    pub credentials: Credentials,
    pub tls_server_name: Option<String>,
}

impl ContextSpec {
    pub fn for_server(name: &str, server: &ApiServer) -> ContextSpec {
        ContextSpec {
            name: name.into(),
            server: server.url(),
            ca_pem: server.pki.ca_pem.clone(),
            namespace: None,
            user: format!("{name}-user"),
            credentials: Credentials::None,
            tls_server_name: None,
        }
    }
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.into());
        self
    }
    pub fn credentials(mut self, c: Credentials) -> Self {
        self.credentials = c;
        self
    }
}

fn b64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A kubeconfig with these contexts (each with its own cluster and user).
pub fn kubeconfig(contexts: &[ContextSpec], current: Option<&str>) -> String {
    let mut clusters = String::new();
    let mut users = String::new();
    let mut ctxs = String::new();
    for c in contexts {
        clusters.push_str(&format!(
            "- name: {n}-cluster\n  cluster:\n    server: {s}\n    certificate-authority-data: {ca}\n",
            n = c.name,
            s = c.server,
            ca = b64(c.ca_pem.as_bytes())
        ));
        if let Some(name) = &c.tls_server_name {
            clusters.push_str(&format!("    tls-server-name: {name}\n"));
        }
        let user = match &c.credentials {
            Credentials::None => "{}".to_string(),
            Credentials::Token(t) => format!("\n    token: {t}"),
            Credentials::Cert(cert, key) => format!(
                "\n    client-certificate-data: {}\n    client-key-data: {}",
                b64(cert.as_bytes()),
                b64(key.as_bytes())
            ),
            Credentials::Exec(cmd, args) => format!(
                "\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {cmd}\n      args: [{}]\n      interactiveMode: Never",
                args.iter()
                    .map(|a| format!("{a:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        users.push_str(&format!("- name: {}\n  user: {user}\n", c.user));
        let ns = c
            .namespace
            .as_ref()
            .map(|n| format!(", namespace: {n}"))
            .unwrap_or_default();
        ctxs.push_str(&format!(
            "- name: {n}\n  context: {{cluster: {n}-cluster, user: {u}{ns}}}\n",
            n = c.name,
            u = c.user
        ));
    }
    let current = current
        .map(|c| format!("current-context: {c}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\n{current}clusters:\n{clusters}users:\n{users}contexts:\n{ctxs}"
    )
}

/// A temporary directory holding kubeconfigs and outputs; HOME for the child too, so the
/// developer's own ~/.kube/config is never read.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// A command for `bin` (one of the tool's binaries, or any program) with a clean environment: KUBECONFIG as given (or unset), HOME here,
    /// no proxies, no colours.
    pub fn command(&self, bin: &str, kubeconfig: Option<&Path>) -> std::process::Command {
        let program = if bin.starts_with("kubectl-sched") || bin.starts_with("kubectl_complete-") {
            binary(bin)
        } else {
            PathBuf::from(bin)
        };
        let mut cmd = std::process::Command::new(program);
        for var in [
            "KUBECONFIG",
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_SERVICE_PORT",
            "POD_NAMESPACE",
            "RUST_BACKTRACE",
            "COLUMNS",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200");
        if let Some(k) = kubeconfig {
            cmd.env("KUBECONFIG", k);
        }
        cmd
    }

    /// Runs `kubectl-sched ARGS` with this kubeconfig.
    pub fn run(&self, kubeconfig: &Path, args: &[&str]) -> Run {
        Run::from(
            self.command("kubectl-sched", Some(kubeconfig))
                .args(args)
                .output()
                .expect("run kubectl-sched"),
        )
    }
}

pub fn binary(name: &str) -> PathBuf {
    match name {
        "kubectl-sched" => PathBuf::from(env!("CARGO_BIN_EXE_kubectl-sched")),
        "kubectl-sched_explain" => PathBuf::from(env!("CARGO_BIN_EXE_kubectl-sched_explain")),
        "kubectl-sched_whatif" => PathBuf::from(env!("CARGO_BIN_EXE_kubectl-sched_whatif")),
        "kubectl_complete-sched_explain" => {
            PathBuf::from(env!("CARGO_BIN_EXE_kubectl_complete-sched_explain"))
        }
        other => panic!("unknown binary {other}"),
    }
}

/// A finished run: exit code and text.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// The repository's root, for fixtures.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A server loaded with fixtures/live/cluster.yaml, and a workspace whose kubeconfig points at it
/// (context "test", namespace team-a).
pub fn fixture_server() -> (apiserver::ApiServer, Workspace, PathBuf) {
    let server = apiserver::ApiServer::start();
    server.load(&repo().join("fixtures/live/cluster.yaml"));
    let ws = Workspace::new();
    let kc = ws.write(
        "config",
        &kubeconfig(
            &[ContextSpec::for_server("test", &server).namespace("team-a")],
            Some("test"),
        ),
    );
    (server, ws, kc)
}
