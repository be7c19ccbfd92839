//! `--config` from the command line: profiles chosen by the pod's schedulerName, and invalid
//! configurations refused with kube-scheduler's error and exit code 2.

use assert_cmd::Command;

const CLUSTER: &str = "fixtures/conformance/config-second-profile/cluster.yaml";
const POD: &str = "fixtures/conformance/config-second-profile/pod.yaml";

fn whatif(pod: &str, config: &str) -> assert_cmd::assert::Assert {
    Command::cargo_bin("kubectl-sched")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "whatif",
            "--snapshot",
            CLUSTER,
            "-f",
            pod,
            "-o",
            "json",
            "--config",
            config,
            // The dump names no release: the newest, said on stderr unless named here.
            "--scheduler-version",
            "1.37",
        ])
        .assert()
}

fn refused(config: &str, message: &str) {
    whatif(POD, config)
        .code(2)
        .stdout("")
        .stderr(format!("error: {config}: {message}\n"));
}

#[test]
fn invalid_configurations_are_refused_as_kube_scheduler_refuses_them() {
    refused(
        "fixtures/config/invalid-fit-weight.yaml",
        "initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin \"NodeResourcesFit\": scoringStrategy.resources[0].weight: Invalid value: 200: resource weight of cpu not in valid range (0, 100]",
    );
    refused(
        "fixtures/config/invalid-percentage.yaml",
        "[profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100], percentageOfNodesToScore: Invalid value: 150: not in valid range [0-100]]",
    );
    refused(
        "fixtures/config/unknown-field.yaml",
        "strict decoding error: unknown field \"profiles[0].plugins.multipoint\"",
    );
    refused(
        "fixtures/config/unknown-plugin.yaml",
        "initializing profiles: creating profile for scheduler name default-scheduler: FilterPlugin \"NoSuchPlugin\" does not exist",
    );
    refused(
        "fixtures/config/old-version.yaml",
        "no kind \"KubeSchedulerConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1beta3\" in scheme \"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme/scheme.go:29\"",
    );
}

#[test]
fn the_pod_runs_in_the_profile_it_names() {
    let out = whatif(
        "fixtures/config/pod-no-scoring.yaml",
        "fixtures/config/two-profiles.yaml",
    )
    .code(0);
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["profile"], "no-scoring");
    let nodes = v["nodes"].as_array().unwrap();
    assert!(!nodes.is_empty());
    assert!(
        nodes
            .iter()
            .all(|n| n["scores"].as_object().is_some_and(|s| s.is_empty()))
    );

    // The pod of the conformance case names a profile this configuration lacks.
    whatif(POD, "fixtures/config/two-profiles.yaml").code(2);
}
