//! Writes a deterministic, realistic large cluster snapshot for benchmarks:
//! `cargo run --release --example gen-cluster -- --nodes 5000 --pods-per-node 30 --seed 1 -o big.json`
//! (`.json`, `.yaml`, either with `.gz`).
//!
//! Zones and regions, instance types, tainted control-plane nodes, GPU nodes with an extended
//! resource and a taint, cordoned nodes; Deployments (ReplicaSets, Services, PDBs) and StatefulSets
//! (with PVCs bound to zonal PVs) whose pods carry owner references, labels, requests, zone spread,
//! hostname anti-affinity and host ports; DaemonSet pods on every node; PriorityClasses. With
//! `--gpus-per-node N`, dynamic resource allocation too: a DeviceClass, one ResourceSlice of N
//! GPUs per worker node (each with its own UUID), a quarter of them allocated to running pods'
//! claims, and two pending claims in payments-0: `bench-gpu` (one GPU) and `bench-a100` (one
//! GPU with a request selector).

use serde_json::{Value, json};
use std::io::{BufWriter, Write};

struct Opts {
    nodes: usize,
    pods_per_node: usize,
    gpus_per_node: usize,
    seed: u64,
    out: String,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        nodes: 1000,
        pods_per_node: 30,
        gpus_per_node: 0,
        seed: 1,
        out: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--nodes" => o.nodes = val()?.parse().map_err(|e| format!("--nodes: {e}"))?,
            "--pods-per-node" => {
                o.pods_per_node = val()?
                    .parse()
                    .map_err(|e| format!("--pods-per-node: {e}"))?
            }
            "--gpus-per-node" => {
                o.gpus_per_node = val()?
                    .parse()
                    .map_err(|e| format!("--gpus-per-node: {e}"))?
            }
            "--seed" => o.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "-o" | "--output" => o.out = val()?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.out.is_empty() {
        return Err(
            "usage: gen-cluster --nodes N --pods-per-node M [--gpus-per-node G] --seed S -o FILE(.json|.yaml)[.gz]"
                .into(),
        );
    }
    Ok(o)
}

const REGIONS: [&str; 2] = ["eu-west-1", "us-east-1"];
const ZONES: [&str; 3] = ["a", "b", "c"];
const TYPES: [(&str, &str, &str); 4] = [
    ("m5.2xlarge", "8", "32Gi"),
    ("m5.4xlarge", "16", "64Gi"),
    ("c5.4xlarge", "16", "32Gi"),
    ("r5.2xlarge", "8", "64Gi"),
];
const TEAMS: [&str; 8] = [
    "payments", "search", "checkout", "identity", "data", "ml", "platform", "growth",
];

struct Gen {
    rng: fastrand::Rng,
    items: Vec<Value>,
    node_names: Vec<(String, String, String)>,
    /// Millicores still free per node.
    free_cpu: Vec<i64>,
    pods_on: Vec<usize>,
    max_pods_per_node: usize,
    pod_count: usize,
}

impl Gen {
    fn node(&mut self, i: usize) {
        let region = REGIONS[i % 2];
        let zone = format!("{region}{}", ZONES[(i / 2) % 3]);
        let name = format!(
            "ip-10-{}-{}-{}.{region}.compute.internal",
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255
        );
        let control_plane = i < 3;
        let gpu = !control_plane && i % 50 == 7;
        let cordoned = !control_plane && i % 97 == 11;
        let (itype, cpu, mem) = if gpu {
            ("g5.8xlarge", "32", "128Gi")
        } else {
            TYPES[self.rng.usize(..TYPES.len())]
        };
        let mut labels = json!({
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone,
            "node.kubernetes.io/instance-type": itype, "eks.amazonaws.com/nodegroup": format!("pool-{}", i % 7),
        });
        let mut taints = vec![];
        let mut alloc =
            json!({"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "200Gi"});
        if control_plane {
            labels["node-role.kubernetes.io/control-plane"] = json!("");
            taints.push(
                json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}),
            );
        }
        if gpu {
            alloc["nvidia.com/gpu"] = json!("4");
            labels["accelerator"] = json!("nvidia-a10g");
            taints
                .push(json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}));
        }
        if cordoned {
            taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}));
        }
        let images: Vec<Value> = (0..12)
            .map(|k| {
                let img = (i * 7 + k * 13) % 40;
                json!({"names": [format!("registry.example.com/team/app-{img}:v{}", img % 5)], "sizeBytes": 50_000_000 + img * 9_000_000})
            })
            .collect();
        self.items.push(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "uid": format!("node-{i}")},
            "spec": {"taints": taints, "unschedulable": cordoned},
            "status": {"capacity": alloc.clone(), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}], "images": images}
        }));
        let cpu_m: i64 = cpu.parse::<i64>().unwrap() * 1000;
        self.node_names.push((name, zone, region.to_string()));
        self.free_cpu.push(if control_plane { 0 } else { cpu_m });
        self.pods_on.push(0);
    }

    #[allow(clippy::too_many_arguments)]
    fn pod(
        &mut self,
        ns: &str,
        name: &str,
        node: usize,
        labels: Value,
        owner: Value,
        cpu_m: i64,
        mem_mi: i64,
        extra: Value,
        priority_class: &str,
    ) {
        let mut spec = json!({
            "nodeName": self.node_names[node].0,
            "priorityClassName": priority_class,
            "containers": [{"name": "main", "image": format!("registry.example.com/team/app-{}:v1", self.pod_count % 40),
                             "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi")},
                                           "limits": {"memory": format!("{}Mi", mem_mi * 2)}}}],
        });
        if let Value::Object(m) = extra {
            for (k, v) in m {
                spec[k] = v;
            }
        }
        self.free_cpu[node] -= cpu_m;
        self.pods_on[node] += 1;
        self.pod_count += 1;
        self.items.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": format!("pod-{}", self.pod_count), "labels": labels,
                         "ownerReferences": [owner], "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": spec,
            "status": {"phase": "Running", "startTime": format!("2026-11-{:02}T{:02}:00:00Z", 1 + self.pod_count % 20, self.pod_count % 24)}
        }));
    }

    /// A node with room for `cpu_m`, preferring `zone` when given; None when the cluster is full.
    fn place(&mut self, cpu_m: i64, avoid: &[usize], zone: Option<&str>) -> Option<usize> {
        let n = self.node_names.len();
        for attempt in 0..64 {
            let i = self.rng.usize(3..n);
            if (attempt < 32 && zone.is_some_and(|z| self.node_names[i].1 != z))
                || avoid.contains(&i)
            {
                continue;
            }
            if self.free_cpu[i] >= cpu_m
                && self.pods_on[i] < self.max_pods_per_node
                && !self.items_is_special(i)
            {
                return Some(i);
            }
        }
        None
    }

    fn items_is_special(&self, node: usize) -> bool {
        // GPU and cordoned nodes only run pods that ask for them (or ran before the cordon).
        node % 50 == 7 || node % 97 == 11
    }
}

/// DRA: a GPU DeviceClass, a slice per worker node, a quarter of the GPUs allocated to claims of
/// running pods, and the pending claims the benchmark's pods use.
fn dra_objects(g: &mut Gen, nodes: usize, gpus: usize) {
    const DRIVER: &str = "gpu.nvidia.com";
    g.items.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}}));
    let gpu_request =
        |name: &str| json!({"requests": [{"name": name, "exactly": {"deviceClassName": DRIVER}}]});
    for n in 3..nodes {
        let node = g.node_names[n].0.clone();
        let product = if n % 3 == 0 {
            "NVIDIA H100"
        } else {
            "NVIDIA A100"
        };
        let devices: Vec<Value> = (0..gpus)
            .map(|d| {
                json!({"name": format!("gpu-{d}"), "attributes": {
                    "uuid": {"string": format!("GPU-{n:08x}-{d:04x}")},
                    "productName": {"string": product},
                    "driverVersion": {"version": "550.54.15"},
                    "resource.kubernetes.io/pcieRoot": {"string": format!("pci0000:{:02x}", d / 2)}},
                  "capacity": {"memory": {"value": "80Gi"}}})
            })
            .collect();
        g.items.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-{DRIVER}")},
            "spec": {"driver": DRIVER, "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}));
        for d in (0..gpus).filter(|d| (n + d) % 4 == 0) {
            let claim = format!("train-{n}-{d}");
            g.items.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": claim, "namespace": "ml-0", "uid": format!("claim-{n}-{d}")},
                "spec": {"devices": gpu_request("gpu")},
                "status": {"allocation": {
                    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": format!("gpu-{d}")}]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                  "reservedFor": [{"resource": "pods", "name": claim, "uid": format!("pod-{claim}")}]}}));
        }
    }
    g.items.push(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "bench-gpu", "namespace": "payments-0", "uid": "bench-gpu"},
        "spec": {"devices": gpu_request("gpu")}}),
    );
    g.items.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "bench-a100", "namespace": "payments-0", "uid": "bench-a100"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA A100\""}}]}}]}}}));
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(o.seed),
        items: Vec::new(),
        node_names: Vec::new(),
        free_cpu: Vec::new(),
        pods_on: Vec::new(),
        max_pods_per_node: o.pods_per_node.max(4) + 4,
        pod_count: 0,
    };
    for (name, value, never) in [
        // `system-` is reserved: an API server refuses any other PriorityClass of that prefix.
        ("cluster-critical-apps", 1_000_000, false),
        ("high", 10_000, false),
        ("standard", 1_000, false),
        ("batch", 100, true),
    ] {
        let mut pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value});
        if never {
            pc["preemptionPolicy"] = json!("Never");
        }
        if name == "standard" {
            pc["globalDefault"] = json!(true);
        }
        g.items.push(pc);
    }
    for i in 0..o.nodes {
        g.node(i);
    }
    let namespaces: Vec<String> = (0..40)
        .map(|i| format!("{}-{}", TEAMS[i % TEAMS.len()], i / TEAMS.len()))
        .collect();
    for ns in namespaces
        .iter()
        .map(String::as_str)
        .chain(["kube-system", "monitoring"])
    {
        g.items.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": ns.split('-').next().unwrap()}}}));
    }
    // DaemonSets: on every node, tolerating everything.
    for (ds, cpu) in [
        ("kube-proxy", 100),
        ("node-exporter", 50),
        ("fluent-bit", 100),
    ] {
        let ns = if ds == "node-exporter" {
            "monitoring"
        } else {
            "kube-system"
        };
        for n in 0..o.nodes {
            let owner = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds, "uid": format!("ds-{ds}"), "controller": true});
            let name = format!("{ds}-{n:05x}");
            g.pod(ns, &name, n, json!({"app": ds}), owner, cpu, 64, json!({"tolerations": [{"operator": "Exists"}], "hostNetwork": ds == "node-exporter",
                "priority": 2000001000}), "system-node-critical");
            g.free_cpu[n] += if n < 3 { cpu } else { 0 };
        }
    }
    let target = o.nodes * o.pods_per_node;
    let mut deploy = 0;
    while g.pod_count < target {
        let ns = namespaces[deploy % namespaces.len()].clone();
        let app = format!("svc-{deploy}");
        let stateful = deploy % 10 == 3;
        let replicas = if stateful { 3 } else { 2 + g.rng.usize(..12) };
        let cpu_m = [50, 100, 200, 400][g.rng.usize(..4)];
        let mem = [128, 256, 512, 2048][g.rng.usize(..4)];
        let hash = format!("{:x}", 0x5d8c7b9f4u64 + deploy as u64);
        let spread = deploy % 3 == 0;
        let anti = deploy % 5 == 0;
        let host_port = deploy % 40 == 1;
        let labels = json!({"app": app, "team": ns.split('-').next().unwrap(), "pod-template-hash": hash, "version": format!("v{}", deploy % 4)});
        let (owner_kind, owner_name) = if stateful {
            ("StatefulSet", app.clone())
        } else {
            ("ReplicaSet", format!("{app}-{hash}"))
        };
        let owner = json!({"apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name, "uid": format!("owner-{deploy}"), "controller": true});
        let selector = json!({"matchLabels": {"app": app}});
        let mut spec = json!({"replicas": replicas, "selector": selector, "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": "x"}]}}});
        if stateful {
            spec["serviceName"] = json!(app);
        }
        g.items.push(json!({"apiVersion": "apps/v1", "kind": owner_kind, "metadata": {"name": owner_name, "namespace": ns}, "spec": spec}));
        g.items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": app, "namespace": ns}, "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}));
        if replicas > 2 {
            g.items.push(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": ns},
                "spec": {"maxUnavailable": 1, "selector": selector}, "status": {"disruptionsAllowed": 1, "currentHealthy": replicas, "desiredHealthy": replicas - 1, "expectedPods": replicas}}));
        }
        let mut extra = json!({});
        if spread {
            extra["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}]);
        }
        if anti {
            extra["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}]}});
        }
        let priority = ["high", "standard", "standard", "batch"][deploy % 4];
        let mut used = Vec::new();
        let mut suffixes = std::collections::HashSet::new();
        for r in 0..replicas {
            let zone = spread.then(|| g.node_names[3 + r % 6 % (o.nodes - 3).max(1)].1.clone());
            let Some(node) = g.place(
                cpu_m,
                if anti || host_port { &used } else { &[] },
                zone.as_deref(),
            ) else {
                break;
            };
            used.push(node);
            let mut extra = extra.clone();
            if host_port {
                extra["containers"] = json!([{"name": "main", "image": "registry.example.com/team/gateway:v1", "ports": [{"containerPort": 9443, "hostPort": 9443}],
                    "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": format!("{mem}Mi")}}}]);
            }
            if stateful {
                let claim = format!("data-{app}-{r}");
                let (_, zone, _) = g.node_names[node].clone();
                extra["volumes"] =
                    json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
                let pv = format!("pv-{deploy}-{r}");
                g.items.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": ns},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "volumeName": pv, "resources": {"requests": {"storage": "20Gi"}}},
                    "status": {"phase": "Bound"}}));
                g.items.push(json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                    "spec": {"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                             "claimRef": {"namespace": ns, "name": claim}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{deploy}-{r}")},
                             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}},
                    "status": {"phase": "Bound"}}));
            }
            let name = if stateful {
                format!("{app}-{r}")
            } else {
                // Drawn again on a clash: the API server holds one pod of a name.
                let suffix = loop {
                    let s = g.rng.u32(..0xfffff);
                    if suffixes.insert(s) {
                        break s;
                    }
                };
                format!("{app}-{hash}-{suffix:05x}")
            };
            g.pod(
                &ns,
                &name,
                node,
                labels.clone(),
                owner.clone(),
                cpu_m,
                mem,
                extra,
                priority,
            );
        }
        deploy += 1;
        if deploy > target {
            break;
        }
    }
    g.items.push(json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"}));
    if o.gpus_per_node > 0 {
        dra_objects(&mut g, o.nodes, o.gpus_per_node);
    }
    let out = std::fs::File::create(&o.out).unwrap_or_else(|e| panic!("{}: {e}", o.out));
    let gz = o.out.ends_with(".gz");
    let yaml = o.out.trim_end_matches(".gz").ends_with(".yaml")
        || o.out.trim_end_matches(".gz").ends_with(".yml");
    let mut w: Box<dyn Write> = if gz {
        Box::new(BufWriter::new(flate2::write::GzEncoder::new(
            out,
            flate2::Compression::fast(),
        )))
    } else {
        Box::new(BufWriter::new(out))
    };
    if yaml {
        for item in &g.items {
            writeln!(w, "---").unwrap();
            w.write_all(serde_saphyr::to_string(item).unwrap().as_bytes())
                .unwrap();
        }
    } else {
        write!(w, "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[").unwrap();
        for (i, item) in g.items.iter().enumerate() {
            if i > 0 {
                w.write_all(b",\n").unwrap();
            }
            serde_json::to_writer(&mut w, item).unwrap();
        }
        writeln!(w, "]}}").unwrap();
    }
    w.flush().unwrap();
    eprintln!(
        "{}: {} nodes, {} pods, {} objects",
        o.out,
        o.nodes,
        g.pod_count,
        g.items.len()
    );
}
