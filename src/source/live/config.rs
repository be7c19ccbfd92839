//! Which cluster, as which user, in which namespace: kubeconfig resolution as kubectl does it.
//!
//! `--kubeconfig` names the only file read; otherwise every file of `$KUBECONFIG` that exists is
//! merged (the first to set a value wins); otherwise `~/.kube/config`. With no configuration at
//! all, a pod's service account is used (in-cluster). `--context`, `--cluster` and `--user`
//! override the current context's choices, and the namespace defaults to the context's.

use super::error::LiveError;
use kube::config::{Context, KubeConfigOptions, Kubeconfig, NamedContext};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The flags that say where and how to connect.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub namespace: Option<String>,
    /// `None`: no limit.
    pub request_timeout: Option<Duration>,
    pub consistent_read: bool,
}

/// What the process environment contributes, captured once so resolution can be tested without
/// touching the real environment.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub kubeconfig: Option<OsString>,
    pub home: Option<PathBuf>,
    /// `KUBERNETES_SERVICE_HOST` and `_PORT` are both set: we run in a pod.
    pub in_cluster: bool,
    pub pod_namespace: Option<String>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Env {
            kubeconfig: var("KUBECONFIG"),
            home: var("HOME")
                .or_else(|| var("USERPROFILE"))
                .map(PathBuf::from),
            in_cluster: var("KUBERNETES_SERVICE_HOST").is_some()
                && var("KUBERNETES_SERVICE_PORT").is_some(),
            pod_namespace: var("POD_NAMESPACE").and_then(|v| v.into_string().ok()),
        }
    }
}

/// A resolved connection: the client configuration and what messages name.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: kube::Config,
    /// The kubeconfig context, or `None` in-cluster.
    pub context: Option<String>,
    /// The kubeconfig user (or the service account in-cluster), for messages.
    pub user: Option<String>,
    pub namespace: String,
    pub request_timeout: Option<Duration>,
    pub consistent_read: bool,
}

impl Target {
    pub fn server(&self) -> String {
        self.config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string()
    }
}

/// Parses `--request-timeout` as kubectl does: a Go duration (`30s`, `1m30s`, `500ms`, `1.5h`)
/// or a bare number of seconds; zero means no timeout.
pub fn parse_duration(s: &str) -> Result<Option<Duration>, String> {
    let bad = || {
        format!(
            "invalid --request-timeout {s:?}: use a duration such as 30s, 2m or 1h (0 waits forever)"
        )
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok((secs > 0).then(|| Duration::from_secs(secs)));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total += value * scale;
    }
    if total <= 0.0 {
        return Ok(None);
    }
    Duration::try_from_secs_f64(total)
        .map(Some)
        .map_err(|_| bad())
}

/// The merged kubeconfig and the files it came from, or `None` when there is none.
fn load_kubeconfig(
    opts: &ConnectOptions,
    env: &Env,
) -> Result<Option<(Kubeconfig, Vec<PathBuf>)>, LiveError> {
    let read = |path: &Path| {
        Kubeconfig::read_from(path).map_err(|e| {
            LiveError::new(format!(
                "cannot read the kubeconfig {}: {}",
                path.display(),
                first_line(&e.to_string())
            ))
            .with_detail(&e)
        })
    };
    if let Some(path) = &opts.kubeconfig {
        if !path.exists() {
            return Err(LiveError::new(format!(
                "the kubeconfig {} given with --kubeconfig does not exist",
                path.display()
            )));
        }
        return Ok(Some((read(path)?, vec![path.clone()])));
    }
    let candidates: Vec<PathBuf> = match &env.kubeconfig {
        Some(list) => std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        None => env
            .home
            .iter()
            .map(|h| h.join(".kube").join("config"))
            .collect(),
    };
    // kubectl skips the files of $KUBECONFIG that do not exist.
    let mut merged: Option<Kubeconfig> = None;
    let mut files = Vec::new();
    for path in candidates.into_iter().filter(|p| p.exists()) {
        let config = read(&path)?;
        merged = Some(match merged {
            None => config,
            Some(m) => m.merge(config).map_err(|e| {
                LiveError::new(format!(
                    "cannot merge the kubeconfig {} with the files before it: {e}",
                    path.display()
                ))
            })?,
        });
        files.push(path);
    }
    Ok(merged.map(|m| (m, files)))
}

/// The kubeconfig's context, cluster and user names, each sorted, for completion; empty when
/// there is no kubeconfig or it cannot be read.
pub fn kubeconfig_names(opts: &ConnectOptions, env: &Env) -> [Vec<String>; 3] {
    let Ok(Some((k, _))) = load_kubeconfig(opts, env) else {
        return Default::default();
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    [
        sorted(k.contexts.into_iter().map(|c| c.name).collect()),
        sorted(k.clusters.into_iter().map(|c| c.name).collect()),
        sorted(k.auth_infos.into_iter().map(|a| a.name).collect()),
    ]
}

fn is_empty(k: &Kubeconfig) -> bool {
    k.clusters.is_empty()
        && k.contexts.is_empty()
        && k.auth_infos.is_empty()
        && k.current_context.is_none()
}

fn names<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = items.map(String::as_str).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// Name given to the context kubectl assembles from `--cluster`/`--user` when the kubeconfig has
/// no current context.
const FLAGS_CONTEXT: &str = "(from --cluster and --user)";

/// Resolves the flags and environment to a client configuration; reads files, connects nowhere.
pub async fn resolve(opts: &ConnectOptions, env: &Env) -> Result<Target, LiveError> {
    let loaded = load_kubeconfig(opts, env)?;
    let explicit_ns = opts.namespace.clone().filter(|n| !n.is_empty());
    let base = |config: kube::Config,
                context: Option<String>,
                user: Option<String>,
                namespace: String| Target {
        config,
        context,
        user,
        namespace: explicit_ns.clone().unwrap_or(namespace),
        request_timeout: opts.request_timeout,
        consistent_read: opts.consistent_read,
    };

    let (mut kubeconfig, files) = match loaded {
        Some((k, files)) if !is_empty(&k) || opts.kubeconfig.is_some() => (k, files),
        _ if env.in_cluster && opts.context.is_none() && opts.cluster.is_none() => {
            let config = kube::Config::incluster().map_err(|e| {
                LiveError::new(format!(
                    "no kubeconfig found, and the in-cluster service account cannot be used: {e}"
                ))
                .with_detail(&e)
            })?;
            let ns = env
                .pod_namespace
                .clone()
                .unwrap_or_else(|| config.default_namespace.clone());
            return Ok(finish(
                base(config, None, Some("the pod's service account".into()), ns),
                opts,
            ));
        }
        _ => {
            let looked = match &env.kubeconfig {
                Some(list) => format!(
                    "none of the files in $KUBECONFIG ({}) exists",
                    list.to_string_lossy()
                ),
                None => "$KUBECONFIG is not set and ~/.kube/config does not exist".to_string(),
            };
            return Err(LiveError::new(format!(
                "no kubeconfig found ({looked}) and not running inside a cluster: pass --kubeconfig, or --snapshot FILE to read a saved snapshot"
            )));
        }
    };
    let where_ = if files.len() == 1 {
        files[0].display().to_string()
    } else {
        format!(
            "the kubeconfig files {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };

    let context_name = match opts
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone().filter(|c| !c.is_empty()))
    {
        Some(name) => name,
        None if opts.cluster.is_some() => {
            kubeconfig.contexts.push(NamedContext {
                name: FLAGS_CONTEXT.into(),
                context: Some(Context {
                    cluster: String::new(),
                    ..Default::default()
                }),
                ..Default::default()
            });
            FLAGS_CONTEXT.into()
        }
        None => {
            return Err(LiveError::new(format!(
                "{where_} sets no current-context: pass --context (contexts: {})",
                names(kubeconfig.contexts.iter().map(|c| &c.name))
            )));
        }
    };
    let Some(context) = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .map(|c| c.context.clone().unwrap_or_default())
    else {
        return Err(LiveError::new(format!(
            "context {context_name:?} not found in {where_} (contexts: {})",
            names(kubeconfig.contexts.iter().map(|c| &c.name))
        )));
    };
    let cluster_name = opts
        .cluster
        .clone()
        .unwrap_or_else(|| context.cluster.clone());
    if !kubeconfig.clusters.iter().any(|c| c.name == cluster_name) {
        let what = if opts.cluster.is_some() {
            format!("cluster {cluster_name:?} given with --cluster")
        } else {
            format!("cluster {cluster_name:?} of context {context_name:?}")
        };
        return Err(LiveError::new(format!(
            "{what} not found in {where_} (clusters: {})",
            names(kubeconfig.clusters.iter().map(|c| &c.name))
        )));
    }
    let user_name = opts
        .user
        .clone()
        .or_else(|| context.user.clone())
        .filter(|u| !u.is_empty());
    if let Some(user) = &opts.user
        && !kubeconfig.auth_infos.iter().any(|u| &u.name == user)
    {
        return Err(LiveError::new(format!(
            "user {user:?} given with --user not found in {where_} (users: {})",
            names(kubeconfig.auth_infos.iter().map(|u| &u.name))
        )));
    }
    let options = KubeConfigOptions {
        context: Some(context_name.clone()),
        cluster: Some(cluster_name.clone()),
        user: user_name.clone(),
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| {
            LiveError::new(format!(
                "context {context_name:?} of {where_} cannot be used: {}",
                first_line(&e.to_string())
            ))
            .with_detail(&e)
        })?;
    let ns = context
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let context = (context_name != FLAGS_CONTEXT).then_some(context_name);
    Ok(finish(base(config, context, user_name, ns), opts))
}

fn finish(mut target: Target, opts: &ConnectOptions) -> Target {
    let agent = concat!("kubectl-sched/", env!("CARGO_PKG_VERSION"));
    target.config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(agent),
    ));
    if let Some(t) = opts.request_timeout {
        target.config.connect_timeout = Some(target.config.connect_timeout.map_or(t, |c| c.min(t)));
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0").unwrap(), None);
        assert_eq!(parse_duration("0s").unwrap(), None);
        assert_eq!(parse_duration("5").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(
            parse_duration("1m30s").unwrap(),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_duration("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_duration("1.5h").unwrap(),
            Some(Duration::from_secs(5400))
        );
        for bad in ["", "s", "10x", "1m-", "-1s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const A: &str = "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: ca\n  cluster: {server: 'https://a.example:6443'}\nusers:\n- name: ua\n  user: {token: ta}\ncontexts:\n- name: a\n  context: {cluster: ca, user: ua, namespace: team-a}\n";
    const B: &str = "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: cb\n  cluster: {server: 'https://b.example:6443'}\n- name: ca\n  cluster: {server: 'https://shadowed.example'}\nusers:\n- name: ub\n  user: {token: tb}\ncontexts:\n- name: b\n  context: {cluster: cb, user: ub}\n";

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        futures::executor::block_on(f)
    }

    #[test]
    fn kubeconfig_list_merges_first_wins_and_skips_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", A);
        let b = write(dir.path(), "b", B);
        let missing = dir.path().join("missing");
        let env = Env {
            kubeconfig: Some(std::env::join_paths([&missing, &a, &b]).unwrap()),
            ..Default::default()
        };
        let t = block(resolve(&ConnectOptions::default(), &env)).unwrap();
        assert_eq!(t.context.as_deref(), Some("a"));
        assert_eq!(t.namespace, "team-a");
        assert_eq!(t.server(), "https://a.example:6443");

        let opts = ConnectOptions {
            context: Some("b".into()),
            ..Default::default()
        };
        let t = block(resolve(&opts, &env)).unwrap();
        assert_eq!(t.namespace, "default");
        assert_eq!(t.user.as_deref(), Some("ub"));
        assert_eq!(t.server(), "https://b.example:6443");

        // The first file's "ca" wins over the second's.
        let opts = ConnectOptions {
            context: Some("b".into()),
            cluster: Some("ca".into()),
            namespace: Some("x".into()),
            ..Default::default()
        };
        let t = block(resolve(&opts, &env)).unwrap();
        assert_eq!(t.server(), "https://a.example:6443");
        assert_eq!(t.namespace, "x");
    }

    #[test]
    fn explicit_kubeconfig_ignores_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", A);
        let b = write(dir.path(), "b", B);
        let env = Env {
            kubeconfig: Some(a.clone().into_os_string()),
            ..Default::default()
        };
        let opts = ConnectOptions {
            kubeconfig: Some(b),
            ..Default::default()
        };
        assert_eq!(
            block(resolve(&opts, &env)).unwrap().context.as_deref(),
            Some("b")
        );
        let opts = ConnectOptions {
            kubeconfig: Some(dir.path().join("nope")),
            ..Default::default()
        };
        let err = block(resolve(&opts, &env)).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn home_config_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".kube")).unwrap();
        write(&dir.path().join(".kube"), "config", B);
        let env = Env {
            home: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        assert_eq!(
            block(resolve(&ConnectOptions::default(), &env))
                .unwrap()
                .context
                .as_deref(),
            Some("b")
        );
    }

    #[test]
    fn wrong_names_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", A);
        let env = Env {
            kubeconfig: Some(a.into_os_string()),
            ..Default::default()
        };
        let err = |opts: ConnectOptions| block(resolve(&opts, &env)).unwrap_err().to_string();
        let e = err(ConnectOptions {
            context: Some("prod".into()),
            ..Default::default()
        });
        assert!(
            e.contains("context \"prod\" not found") && e.contains("(contexts: a)"),
            "{e}"
        );
        let e = err(ConnectOptions {
            cluster: Some("nope".into()),
            ..Default::default()
        });
        assert!(
            e.contains("cluster \"nope\" given with --cluster not found"),
            "{e}"
        );
        let e = err(ConnectOptions {
            user: Some("nobody".into()),
            ..Default::default()
        });
        assert!(
            e.contains("user \"nobody\" given with --user not found"),
            "{e}"
        );
    }

    #[test]
    fn nothing_to_use() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            home: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let e = block(resolve(&ConnectOptions::default(), &env))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no kubeconfig found") && e.contains("--snapshot"),
            "{e}"
        );

        let no_current = write(dir.path(), "k", &A.replace("current-context: a\n", ""));
        let env = Env {
            kubeconfig: Some(no_current.into_os_string()),
            ..Default::default()
        };
        let e = block(resolve(&ConnectOptions::default(), &env))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sets no current-context: pass --context (contexts: a)"),
            "{e}"
        );
        // --cluster alone is enough, as with kubectl.
        let opts = ConnectOptions {
            cluster: Some("ca".into()),
            ..Default::default()
        };
        let t = block(resolve(&opts, &env)).unwrap();
        assert_eq!(t.context, None);
        assert_eq!(t.server(), "https://a.example:6443");
    }
}
