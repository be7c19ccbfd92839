//! Resource arguments as kubectl takes them: `NAME`, `pod/NAME`, `deploy/web`, `sts/db`,
//! `job.batch/x`, and this tool's `NAMESPACE/NAME`; a workload's pods found through owner
//! references (Deployment → ReplicaSets → pods, CronJob → Jobs → pods).

use crate::model::cluster::{Cluster, Controller};
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::collections::HashSet;
use std::sync::Arc;

/// A type `explain` takes, with the names kubectl knows it by.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceType {
    pub kind: &'static str,
    /// Singular, plural, short names: the first is how messages name it.
    pub names: &'static [&'static str],
    pub group: &'static str,
}

impl ResourceType {
    pub fn plural(&self) -> &'static str {
        self.names[1]
    }

    pub fn is_pod(&self) -> bool {
        self.kind == "Pod"
    }
}

/// The types `explain` takes, pods first, then the workloads whose pending pods it explains.
pub const TYPES: [ResourceType; 8] = [
    ResourceType {
        kind: "Pod",
        names: &["pod", "pods", "po"],
        group: "",
    },
    ResourceType {
        kind: "Deployment",
        names: &["deployment", "deployments", "deploy"],
        group: "apps",
    },
    ResourceType {
        kind: "ReplicaSet",
        names: &["replicaset", "replicasets", "rs"],
        group: "apps",
    },
    ResourceType {
        kind: "StatefulSet",
        names: &["statefulset", "statefulsets", "sts"],
        group: "apps",
    },
    ResourceType {
        kind: "DaemonSet",
        names: &["daemonset", "daemonsets", "ds"],
        group: "apps",
    },
    ResourceType {
        kind: "ReplicationController",
        names: &["replicationcontroller", "replicationcontrollers", "rc"],
        group: "",
    },
    ResourceType {
        kind: "Job",
        names: &["job", "jobs"],
        group: "batch",
    },
    ResourceType {
        kind: "CronJob",
        names: &["cronjob", "cronjobs", "cj"],
        group: "batch",
    },
];

/// kubectl types `explain` does not take: written before a `/`, they are a type, not a
/// namespace.
const OTHER_KUBECTL_TYPES: &[&str] = &[
    "service",
    "services",
    "svc",
    "node",
    "nodes",
    "no",
    "namespace",
    "namespaces",
    "ns",
    "configmap",
    "configmaps",
    "cm",
    "secret",
    "secrets",
    "persistentvolumeclaim",
    "persistentvolumeclaims",
    "pvc",
    "persistentvolume",
    "persistentvolumes",
    "pv",
    "ingress",
    "ingresses",
    "ing",
    "endpoints",
    "ep",
    "event",
    "events",
    "ev",
    "serviceaccount",
    "serviceaccounts",
    "sa",
    "lease",
    "leases",
    "horizontalpodautoscaler",
    "horizontalpodautoscalers",
    "hpa",
    "poddisruptionbudget",
    "poddisruptionbudgets",
    "pdb",
    "priorityclass",
    "priorityclasses",
    "pc",
    "storageclass",
    "storageclasses",
    "sc",
    "networkpolicy",
    "networkpolicies",
    "netpol",
    "podtemplate",
    "podtemplates",
];

/// What an argument names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub kind: &'static ResourceType,
    pub namespace: String,
    pub name: String,
    /// The namespace came from the argument (`NAMESPACE/NAME`), not from `-n` or the context.
    pub namespace_given: bool,
}

/// `pod (po), deployment (deploy), …`: the types, with their short names.
pub fn supported() -> String {
    TYPES
        .iter()
        .map(|t| match t.names.get(2) {
            Some(short) => format!("{} ({short})", t.names[0]),
            None => t.names[0].to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The type a word names: `deploy`, `deployments.apps`, `jobs.v1.batch`; any case.
fn resource_type(word: &str) -> Option<&'static ResourceType> {
    let word = word.to_ascii_lowercase();
    let (name, rest) = word.split_once('.').unwrap_or((&word, ""));
    TYPES.iter().find(|t| {
        t.names.contains(&name)
            && match rest {
                "" => true,
                rest => {
                    let group = rest.strip_prefix("v1.").unwrap_or(rest);
                    let group = if group == "v1" { "" } else { group };
                    group == t.group
                }
            }
    })
}

/// A namespace is a DNS label: lowercase letters, digits and `-`.
fn could_be_namespace(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 63
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Reads `NAME`, `TYPE/NAME` (`pod/web`, `deploy/web`, `sts/db`, `deployment.apps/web`, …) or
/// `NAMESPACE/NAME`; `namespace` is where a name without one is.
pub fn parse(arg: &str, namespace: &str) -> Result<Target, String> {
    let target = |kind, ns: &str, name: &str, given| Target {
        kind,
        namespace: ns.to_string(),
        name: name.to_string(),
        namespace_given: given,
    };
    let bad = || {
        format!(
            "{arg:?} is not a resource: use NAME, TYPE/NAME or NAMESPACE/NAME (TYPE is one of: {})",
            supported()
        )
    };
    match arg.split('/').collect::<Vec<_>>().as_slice() {
        [name] if !name.is_empty() => Ok(target(&TYPES[0], namespace, name, false)),
        [word, name] if !word.is_empty() && !name.is_empty() => {
            if let Some(t) = resource_type(word) {
                return Ok(target(t, namespace, name, false));
            }
            let lower = word.to_ascii_lowercase();
            let lower_type = lower.split('.').next().unwrap_or_default();
            if OTHER_KUBECTL_TYPES.contains(&lower_type) || !could_be_namespace(word) {
                return Err(format!(
                    "explain does not take {word:?}: it explains pods, and the pending pods of workloads; TYPE is one of: {}",
                    supported()
                ));
            }
            Ok(target(&TYPES[0], word, name, true))
        }
        _ => Err(bad()),
    }
}

/// The type closest to a word read as a namespace, when it looks like a typo of one
/// (`deplyo/web`).
pub fn type_like(word: &str) -> Option<&'static str> {
    TYPES
        .iter()
        .flat_map(|t| t.names.iter())
        .filter(|n| n.len() > 2)
        .map(|n| (strsim::damerau_levenshtein(word, n), *n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// A workload's pods, found through owner references, and what links them to it.
#[derive(Debug, Default)]
pub struct WorkloadPods {
    /// Whether the cluster state shows the workload: the object, or something it owns.
    pub found: bool,
    /// Its pods that are not finished, in name order.
    pub pods: Vec<Arc<Pod>>,
}

/// The pods of a workload: those whose controller is it, or an object it controls (its
/// ReplicaSets, a CronJob's Jobs). A Deployment's ReplicaSet missing from the cluster state is
/// recognised by its name, `<deployment>-<pod-template-hash>`, as the Deployment controller
/// names it.
pub fn workload_pods(cluster: &Cluster, target: &Target) -> WorkloadPods {
    let namespace = Str::new(&target.namespace);
    let kind = Str::new(target.kind.kind);
    let name = Str::new(&target.name);
    let controllers = &cluster.workloads.controllers;
    let mut owners: HashSet<(Str, Str)> = HashSet::from([(kind, name)]);
    let mut found = controllers.contains_key(&Controller {
        kind,
        namespace,
        name,
    });
    // Ownership is at most two levels deep (Deployment → ReplicaSet, CronJob → Job), but a
    // fixed point costs little and needs no such knowledge.
    loop {
        let before = owners.len();
        for (c, owner) in controllers {
            if c.namespace == namespace && owner.is_some_and(|o| owners.contains(&o)) {
                owners.insert((c.kind, c.name));
            }
        }
        if owners.len() == before {
            break;
        }
    }
    let deployment = (target.kind.kind == "Deployment").then(|| format!("{}-", target.name));
    let owned = |p: &Pod| {
        let Some(o) = p.controller() else {
            return false;
        };
        owners.contains(&(o.kind, o.name))
            || deployment.as_deref().is_some_and(|prefix| {
                o.kind.as_str() == "ReplicaSet"
                    && p.labels
                        .get_str("pod-template-hash")
                        .is_some_and(|h| o.name.as_str() == format!("{prefix}{h}"))
            })
    };
    let mut pods: Vec<Arc<Pod>> = cluster
        .pods
        .iter()
        .filter(|p| p.namespace == namespace && owned(p))
        .cloned()
        .collect();
    pods.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    found |= owners.len() > 1 || !pods.is_empty();
    WorkloadPods { found, pods }
}

/// The namespaces where the cluster state holds an object of the target's type and name, for
/// the hint of a "not found".
pub fn namespaces_holding(cluster: &Cluster, target: &Target) -> Vec<String> {
    let mut namespaces: Vec<String> = if target.kind.is_pod() {
        cluster
            .pods
            .iter()
            .chain(&cluster.terminated_pods)
            .filter(|p| p.name.as_str() == target.name)
            .map(|p| p.namespace.to_string())
            .collect()
    } else {
        let mut seen: HashSet<String> = HashSet::new();
        for c in cluster.workloads.controllers.keys() {
            if c.kind.as_str() == target.kind.kind && c.name.as_str() == target.name {
                seen.insert(c.namespace.to_string());
            }
        }
        for p in &cluster.pods {
            let other = Target {
                namespace: p.namespace.to_string(),
                ..target.clone()
            };
            if !seen.contains(p.namespace.as_str()) && workload_pods(cluster, &other).found {
                seen.insert(p.namespace.to_string());
            }
        }
        seen.into_iter().collect()
    };
    namespaces.retain(|ns| *ns != target.namespace);
    namespaces.sort();
    namespaces.dedup();
    namespaces
}

/// `pod "x" not found in namespace "default"; found in namespace shop: add -n shop`.
pub fn not_found(target: &Target, elsewhere: &[String]) -> String {
    let mut message = format!(
        "{} {:?} not found in namespace {:?}",
        target.kind.names[0], target.name, target.namespace
    );
    let fix = |ns: &str| {
        if target.namespace_given {
            format!("use {ns}/{}", target.name)
        } else {
            format!("add -n {ns}")
        }
    };
    match elsewhere {
        [] if target.namespace_given => {
            if let Some(t) = type_like(&target.namespace) {
                message.push_str(&format!(
                    " ({}/{} is read as NAMESPACE/NAME; did you mean {t}/{}?)",
                    target.namespace, target.name, target.name
                ));
            }
        }
        [] => {}
        [ns] => message.push_str(&format!("; found in namespace {ns}: {}", fix(ns))),
        many => message.push_str(&format!(
            "; found in namespaces {}: {}",
            many.join(", "),
            fix("NAMESPACE")
        )),
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use serde_json::json;

    fn parsed(arg: &str) -> (&'static str, String, String) {
        let t = parse(arg, "team").unwrap_or_else(|e| panic!("{arg}: {e}"));
        (t.kind.kind, t.namespace, t.name)
    }

    #[test]
    fn resources_are_read_as_kubectl_reads_them() {
        let pod = |ns: &str, n: &str| ("Pod", ns.to_string(), n.to_string());
        assert_eq!(parsed("web"), pod("team", "web"));
        assert_eq!(parsed("pod/web"), pod("team", "web"));
        assert_eq!(parsed("pods/web"), pod("team", "web"));
        assert_eq!(parsed("po/web"), pod("team", "web"));
        assert_eq!(parsed("prod/web"), pod("prod", "web"));
        assert!(parse("prod/web", "team").unwrap().namespace_given);
        for (arg, kind) in [
            ("deploy/web", "Deployment"),
            ("deployments.apps/web", "Deployment"),
            ("Deployment/web", "Deployment"),
            ("sts/db", "StatefulSet"),
            ("rs/web-7f9c", "ReplicaSet"),
            ("ds/agent", "DaemonSet"),
            ("rc/old", "ReplicationController"),
            ("job/x", "Job"),
            ("jobs.v1.batch/x", "Job"),
            ("cj/nightly", "CronJob"),
        ] {
            assert_eq!(parsed(arg).0, kind, "{arg}");
            assert_eq!(parsed(arg).1, "team", "{arg}");
        }
        for bad in [
            "",
            "pod/",
            "/web",
            "a/b/c",
            "svc/web",
            "no/n1",
            "deploy.extensions/web",
        ] {
            assert!(parse(bad, "team").is_err(), "{bad}");
        }
        let err = parse("svc/web", "team").unwrap_err();
        assert!(
            err.ends_with("pod (po), deployment (deploy), replicaset (rs), statefulset (sts), daemonset (ds), replicationcontroller (rc), job, cronjob (cj)"),
            "{err}"
        );
        assert_eq!(type_like("deplyo"), Some("deploy"));
        assert_eq!(type_like("shop"), None);
    }

    fn owned(kind: &str, name: &str, owner: Option<(&str, &str)>) -> serde_json::Value {
        let api = if kind == "Job" || kind == "CronJob" {
            "batch/v1"
        } else {
            "apps/v1"
        };
        let mut o = json!({"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}}}});
        if kind == "CronJob" {
            o["spec"] = json!({"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}});
        }
        if kind == "Job" {
            o["spec"] = json!({"template": {"spec": {"containers": []}}});
        }
        if let Some((k, n)) = owner {
            o["metadata"]["ownerReferences"] =
                json!([{"apiVersion": "x", "kind": k, "name": n, "uid": n, "controller": true}]);
        }
        o
    }

    fn pod_of(name: &str, owner: (&str, &str), labels: serde_json::Value) -> serde_json::Value {
        let mut p = testing::pod(&format!("shop/{name}"), None, "1", 0, labels);
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "x", "kind": owner.0, "name": owner.1, "uid": owner.1, "controller": true}]);
        p
    }

    #[test]
    fn a_workload_finds_its_pods_through_owner_references() {
        let cluster = testing::cluster(vec![
            owned("Deployment", "web", None),
            owned("ReplicaSet", "web-1a", Some(("Deployment", "web"))),
            pod_of("web-1a-x", ("ReplicaSet", "web-1a"), json!({})),
            // Its ReplicaSet is not in the dump: the name and the hash label tie it to web.
            pod_of(
                "web-2b-y",
                ("ReplicaSet", "web-2b"),
                json!({"pod-template-hash": "2b"}),
            ),
            pod_of(
                "webapp-3c-z",
                ("ReplicaSet", "webapp-3c"),
                json!({"pod-template-hash": "3c"}),
            ),
            owned("CronJob", "nightly", None),
            owned("Job", "nightly-1", Some(("CronJob", "nightly"))),
            pod_of("nightly-1-q", ("Job", "nightly-1"), json!({})),
        ]);
        let names = |arg: &str| {
            let w = workload_pods(&cluster, &parse(arg, "shop").unwrap());
            (
                w.found,
                w.pods
                    .iter()
                    .map(|p| p.name.to_string())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            names("deploy/web"),
            (true, vec!["web-1a-x".to_string(), "web-2b-y".to_string()])
        );
        assert_eq!(names("cj/nightly"), (true, vec!["nightly-1-q".to_string()]));
        assert_eq!(
            names("job/nightly-1"),
            (true, vec!["nightly-1-q".to_string()])
        );
        assert_eq!(names("sts/web"), (false, vec![]));
        let elsewhere = namespaces_holding(&cluster, &parse("deploy/web", "default").unwrap());
        assert_eq!(elsewhere, ["shop"]);
        assert_eq!(
            not_found(&parse("deploy/web", "default").unwrap(), &elsewhere),
            "deployment \"web\" not found in namespace \"default\"; found in namespace shop: add -n shop"
        );
        assert_eq!(
            not_found(&parse("deplyo/web", "default").unwrap(), &[]),
            "pod \"web\" not found in namespace \"deplyo\" (deplyo/web is read as NAMESPACE/NAME; did you mean deploy/web?)"
        );
    }
}
