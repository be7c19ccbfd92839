//! The facts behind the reasons agree with the reasons and with the cluster: every reason a
//! rejected node shows has a fact of the same plugin and text, and what the fact says holds in
//! the case's cluster (the taint is on the node and not tolerated, the port holder holds the
//! port on that node, the resource is short by what the node's numbers say, …).

use serde_json::Value;

/// Reasons that carry no fact: a plugin's internal error has nothing of the cluster behind it.
fn without_facts(plugin: &str, reason: &str) -> bool {
    plugin.is_empty()
        || reason.starts_with("error ")
        || reason.starts_with("running \"")
        || reason.contains("cycleState")
}

/// A quantity in Kubernetes notation as a number (cpu in cores).
fn quantity(v: &Value) -> Option<f64> {
    let s = v.as_str()?;
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    for (suffix, factor) in suffixes {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    s.parse().ok()
}

pub struct Case {
    nodes: Vec<Value>,
    pods: Vec<Value>,
    pod: Value,
}

impl Case {
    pub fn read(dir: &std::path::Path) -> Case {
        let read = |f: &str| -> Value {
            let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            serde_saphyr::from_str(&text).unwrap_or(Value::Null)
        };
        let cluster = read("cluster.yaml");
        let items = cluster["items"].as_array().cloned().unwrap_or_default();
        let of = |kind: &str| -> Vec<Value> {
            items
                .iter()
                .filter(|i| i["kind"] == kind)
                .cloned()
                .collect()
        };
        Case {
            nodes: of("Node"),
            pods: of("Pod"),
            pod: read("pod.yaml"),
        }
    }

    fn node(&self, name: &str) -> Option<&Value> {
        self.nodes.iter().find(|n| n["metadata"]["name"] == name)
    }

    fn pod_named(&self, key: &str) -> Option<&Value> {
        let (ns, name) = key.split_once('/')?;
        self.pods.iter().find(|p| {
            p["metadata"]["name"] == name
                && p["metadata"]["namespace"].as_str().unwrap_or("default") == ns
        })
    }
}

fn tolerates(tolerations: &[Value], taint: &Value) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok =
            t["effect"].as_str().is_none_or(str::is_empty) || t["effect"] == taint["effect"];
        let key = t["key"].as_str().unwrap_or("");
        let op = t["operator"].as_str().unwrap_or("Equal");
        let key_ok = (key.is_empty() && op == "Exists") || taint["key"] == key;
        let value_ok = op == "Exists"
            || t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or("");
        effect_ok && key_ok && value_ok
    })
}

/// What is wrong with one fact of `node`; `None` when it agrees.
fn disagreement(case: &Case, node: &str, f: &Value) -> Option<String> {
    let plugin = f["plugin"].as_str().unwrap_or("");
    let reason = f["reason"].as_str().unwrap_or("");
    let n = case.node(node)?;
    let label = |key: &Value| n["metadata"]["labels"][key.as_str().unwrap_or("")].clone();
    let check = |ok: bool, what: &str| (!ok).then(|| format!("{what}: {f}"));
    match plugin {
        "NodeResourcesFit" => {
            let resource = f["resource"].as_str().unwrap_or("");
            let [requested, allocatable, used, free] = ["requested", "allocatable", "used", "free"]
                .map(|k| quantity(&f[k]).unwrap_or(f64::NAN));
            let named = if reason == "Too many pods" {
                resource == "pods"
            } else {
                reason == format!("Insufficient {resource}")
            };
            let node_alloc = quantity(&n["status"]["allocatable"][resource]).unwrap_or(0.0);
            check(named, "the fact names another resource")
                .or_else(|| {
                    check(
                        (free - (allocatable - used)).abs() < 1e-6,
                        "free ≠ allocatable − used",
                    )
                })
                .or_else(|| check(free < requested, "not short"))
                .or_else(|| {
                    check(
                        (allocatable - node_alloc).abs() < 1e-6,
                        "allocatable is not the node's",
                    )
                })
        }
        "TaintToleration" => {
            let taint = &f["taint"];
            let on_node = n["spec"]["taints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| {
                    t["key"] == taint["key"]
                        && t["effect"] == taint["effect"]
                        && t["value"].as_str().unwrap_or("")
                            == taint["value"].as_str().unwrap_or("")
                });
            let tolerations = case.pod["spec"]["tolerations"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            check(on_node, "the taint is not on the node").or_else(|| {
                check(
                    !tolerates(&tolerations, taint),
                    "the pod tolerates the taint",
                )
            })
        }
        "NodeUnschedulable" => check(
            n["spec"]["unschedulable"] == true,
            "the node is not cordoned",
        ),
        "NodeName" => check(
            f["nodeName"] == case.pod["spec"]["nodeName"] && f["nodeName"] != node,
            "the pod names this node or another",
        ),
        "NodeAffinity" if f.get("nodeValue").is_some() || f["key"] != "metadata.name" => {
            if f["key"] == "metadata.name" {
                return check(f["nodeValue"] == node, "nodeValue is not the node's name");
            }
            let value = label(&f["key"]);
            check(
                f.get("nodeValue").cloned().unwrap_or(Value::Null) == value,
                "nodeValue is not the node's label",
            )
        }
        "NodePorts" => {
            let holds = |p: &Value| {
                p["spec"]["nodeName"] == node
                    && p["spec"]["containers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .chain(p["spec"]["initContainers"].as_array().into_iter().flatten())
                        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
                        .any(|port| {
                            // With hostNetwork the host port defaults to the container port.
                            let host = match &port["hostPort"] {
                                Value::Null if p["spec"]["hostNetwork"] == true => {
                                    &port["containerPort"]
                                }
                                h => h,
                            };
                            *host == f["port"]
                                && port["protocol"].as_str().unwrap_or("TCP") == f["protocol"]
                        })
            };
            let pods = f["pods"].as_array().cloned().unwrap_or_default();
            check(!pods.is_empty(), "no pod holds the port").or_else(|| {
                check(
                    pods.iter()
                        .all(|p| case.pod_named(p.as_str().unwrap_or("")).is_some_and(holds)),
                    "a listed pod does not hold the port on the node",
                )
            })
        }
        "InterPodAffinity" => {
            let domain = label(&f["topologyKey"]);
            let pods = f["pods"].as_array().cloned().unwrap_or_default();
            let in_domain = |p: &Value| {
                let Some(pod) = case.pod_named(p.as_str().unwrap_or("")) else {
                    return false;
                };
                let Some(its_node) = pod["spec"]["nodeName"].as_str().and_then(|m| case.node(m))
                else {
                    return false;
                };
                its_node["metadata"]["labels"][f["topologyKey"].as_str().unwrap_or("")] == domain
            };
            let anti = f["rule"] != "affinity";
            check(
                f.get("domain").cloned().unwrap_or(Value::Null) == domain,
                "domain is not the node's",
            )
            .or_else(|| check(!anti || !pods.is_empty(), "anti-affinity names no pod"))
            .or_else(|| {
                check(
                    pods.iter().all(in_domain),
                    "a listed pod is not in the domain",
                )
            })
        }
        "PodTopologySpread" => {
            let domain = label(&f["topologyKey"]);
            match f.get("domain") {
                None => check(domain.is_null(), "the node has the key"),
                Some(d) => {
                    let (m, min, skew, max) = (
                        f["matching"].as_i64().unwrap_or(0),
                        f["minimum"].as_i64().unwrap_or(0),
                        f["skew"].as_i64().unwrap_or(0),
                        f["maxSkew"].as_i64().unwrap_or(0),
                    );
                    check(*d == domain, "domain is not the node's")
                        .or_else(|| check(skew == m + 1 - min, "skew ≠ matching + 1 − minimum"))
                        .or_else(|| check(skew > max, "skew within maxSkew"))
                }
            }
        }
        "VolumeZone" if f.get("key").is_some() => {
            let value = label(&f["key"]);
            let values = f["values"].as_array().cloned().unwrap_or_default();
            check(
                f.get("nodeValue").cloned().unwrap_or(Value::Null) == value,
                "nodeValue is not the node's",
            )
            .or_else(|| check(!values.contains(&value), "the node's value is allowed"))
        }
        "NodeVolumeLimits" if f.get("limit").is_some() => check(
            f["attached"].as_i64().unwrap_or(0) + f["adding"].as_i64().unwrap_or(0)
                > f["limit"].as_i64().unwrap_or(0),
            "within the limit",
        ),
        _ => None,
    }
}

/// Every reason of every node has facts, and they agree with the case's cluster.
pub fn check(case: &Case, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for n in ours["nodes"].as_array().into_iter().flatten() {
        let name = n["name"].as_str().unwrap_or("");
        let facts = n["facts"].as_array().cloned().unwrap_or_default();
        let mut shown: Vec<(String, String)> = Vec::new();
        let first = n["plugin"].as_str().unwrap_or("");
        for r in n["reasons"].as_array().into_iter().flatten() {
            shown.push((first.to_string(), r.as_str().unwrap_or("").to_string()));
        }
        for (plugin, s) in n["allReasons"].as_object().into_iter().flatten() {
            for r in s["reasons"].as_array().into_iter().flatten() {
                shown.push((plugin.clone(), r.as_str().unwrap_or("").to_string()));
            }
        }
        for (plugin, reason) in shown {
            if without_facts(&plugin, &reason) {
                continue;
            }
            if !facts
                .iter()
                .any(|f| f["plugin"] == plugin && f["reason"] == reason)
            {
                out.push(format!("{name}: {plugin}: {reason:?} has no fact"));
            }
        }
        out.extend(
            facts
                .iter()
                .filter_map(|f| disagreement(case, name, f))
                .map(|d| format!("{name}: {d}")),
        );
    }
    out
}
