//! Whole configurations, read and built into frameworks: defaulting, `*`, weights, plugin
//! arguments, and the errors kube-scheduler gives for invalid ones (v1.34.1 unless a test names
//! another release).

use super::*;
use crate::config;
use crate::plugins::pod_topology_spread::DefaultingType;
use crate::release::Release;

/// The frameworks of a configuration.
struct Loaded {
    frameworks: Vec<Framework>,
}

fn from_text(text: &str, release: ReleaseChoice) -> Result<Loaded, Failure> {
    let cfg = config::from_text(text, release)?;
    Ok(Loaded {
        frameworks: super::frameworks(&cfg, release)?,
    })
}

const HEADER: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn load(body: &str) -> Result<Loaded, Failure> {
    from_text(&format!("{HEADER}{body}"), Release::OLDEST.into())
}

fn frameworks(body: &str) -> Vec<Framework> {
    match load(body) {
        Ok(l) => l.frameworks,
        Err(e) => panic!("{e:?}"),
    }
}

fn rejected(body: &str) -> String {
    match load(body) {
        Err(Failure::Rejected(m)) => m,
        Err(other) => panic!("not a rejection: {other:?}"),
        Ok(_) => panic!("accepted"),
    }
}

fn names(fw: &Framework, list: &[usize]) -> Vec<&'static str> {
    list.iter().map(|&i| fw.plugins[i].name()).collect()
}

fn scores(fw: &Framework) -> Vec<(&'static str, i64)> {
    fw.score
        .iter()
        .map(|&(i, w)| (fw.plugins[i].name(), w))
        .collect()
}

/// The plugin arguments of every profile, as the frameworks get them.
fn plugin_args(body: &str) -> Vec<PluginArgs> {
    let cfg = config::from_text(&format!("{HEADER}{body}"), Release::OLDEST.into()).unwrap();
    cfg.profiles
        .iter()
        .map(|p| {
            let mut out = PluginArgs::default();
            for c in &p.plugin_config {
                assert!(
                    apply(
                        &c.args,
                        &mut out,
                        &Release::OLDEST.features(),
                        &Interner::new()
                    )
                    .is_ok(),
                    "{}",
                    c.name
                );
            }
            out
        })
        .collect()
}

fn without<'a>(list: &[&'a str], name: &str) -> Vec<&'a str> {
    list.iter().copied().filter(|n| *n != name).collect()
}

#[test]
fn an_empty_configuration_is_the_default_profile() {
    let fws = frameworks("");
    let default = default_framework(Release::OLDEST.into());
    assert_eq!(fws.len(), 1);
    let fw = &fws[0];
    assert_eq!(fw.profile, "default-scheduler");
    assert_eq!(fw.percentage_of_nodes_to_score, Some(0));
    assert_eq!(
        names(fw, &fw.pre_filter),
        names(&default, &default.pre_filter)
    );
    assert_eq!(names(fw, &fw.filter), names(&default, &default.filter));
    assert_eq!(
        names(fw, &fw.post_filter),
        names(&default, &default.post_filter)
    );
    assert_eq!(scores(fw), scores(&default));
    assert_eq!(
        names(fw, &fw.post_filter),
        ["DynamicResources", "DefaultPreemption"],
        "DynamicResources runs before DefaultPreemption"
    );
}

#[test]
fn disabling_a_plugin_for_one_point_keeps_it_elsewhere() {
    let default = default_framework(Release::OLDEST.into());
    let fw = &frameworks(
        "profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: NodeResourcesFit\n",
    )[0];
    assert_eq!(
        names(fw, &fw.filter),
        without(&names(&default, &default.filter), "NodeResourcesFit")
    );
    assert!(names(fw, &fw.pre_filter).contains(&"NodeResourcesFit"));
    assert_eq!(scores(fw), scores(&default));
}

#[test]
fn disabling_in_multi_point_removes_it_everywhere() {
    let default = default_framework(Release::OLDEST.into());
    let fw = &frameworks(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: TaintToleration\n",
    )[0];
    assert!(!fw.has_plugin("TaintToleration"));
    assert_eq!(
        names(fw, &fw.filter),
        without(&names(&default, &default.filter), "TaintToleration")
    );
}

#[test]
fn star_disables_every_default_of_a_point() {
    let fw = &frameworks(
        "profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeName\n",
    )[0];
    assert_eq!(names(fw, &fw.filter), ["NodeName"]);
    assert!(names(fw, &fw.pre_filter).contains(&"NodeResourcesFit"));

    let fw = &frameworks(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: PrioritySort\n      - name: DefaultBinder\n      - name: NodeResourcesFit\n        weight: 4\n",
    )[0];
    assert_eq!(names(fw, &fw.filter), ["NodeResourcesFit"]);
    assert_eq!(scores(fw), [("NodeResourcesFit", 4)]);
    assert!(fw.post_filter.is_empty());
}

#[test]
fn an_explicit_point_entry_overrides_and_reorders_multi_point() {
    let fw = &frameworks(
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NodeResourcesFit\n      - name: NodeName\n",
    )[0];
    let filters = names(fw, &fw.filter);
    assert_eq!(&filters[..2], ["NodeResourcesFit", "NodeName"]);
    assert_eq!(filters.iter().filter(|n| **n == "NodeName").count(), 1);
}

#[test]
fn weights_multi_point_explicit_score_and_zero() {
    let fw = &frameworks(
        "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: NodeResourcesBalancedAllocation\n        weight: 5\n      - name: ImageLocality\n        weight: 3\n",
    )[0];
    let s = scores(fw);
    assert!(s.contains(&("NodeResourcesBalancedAllocation", 5)));
    assert!(s.contains(&("ImageLocality", 3)));
    assert!(s.contains(&("TaintToleration", 3)));

    let fw = &frameworks(
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 7\n      - name: TaintToleration\n        weight: 0\n",
    )[0];
    let s = scores(fw);
    assert_eq!(&s[..2], [("ImageLocality", 7), ("TaintToleration", 1)]);
    assert_eq!(s.iter().filter(|(n, _)| *n == "ImageLocality").count(), 1);
}

#[test]
fn profiles_are_chosen_by_scheduler_name_with_their_own_arguments() {
    let body = "profiles:\n- schedulerName: default-scheduler\n- schedulerName: bin-packer\n  percentageOfNodesToScore: 40\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n  plugins:\n    multiPoint:\n      disabled:\n      - name: NodeResourcesBalancedAllocation\npercentageOfNodesToScore: 20\n";
    let fws = frameworks(body);
    assert_eq!(
        fws.iter().map(|f| f.profile.as_str()).collect::<Vec<_>>(),
        ["default-scheduler", "bin-packer"]
    );
    assert_eq!(fws[0].percentage_of_nodes_to_score, Some(20));
    assert_eq!(fws[1].percentage_of_nodes_to_score, Some(40));
    assert!(fws[0].has_plugin("NodeResourcesBalancedAllocation"));
    assert!(!fws[1].has_plugin("NodeResourcesBalancedAllocation"));
    let args = plugin_args(body);
    assert_eq!(
        args[0].node_resources_fit.strategy,
        Strategy::LeastAllocated
    );
    assert_eq!(args[1].node_resources_fit.strategy, Strategy::MostAllocated);
    assert_eq!(
        args[1].node_resources_fit.resources,
        node_resources_fit::default_resources()
    );
}

#[test]
fn requested_to_capacity_ratio_shape_is_scaled_to_node_scores() {
    let args = plugin_args(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      ignoredResourceGroups: [example.com]\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        resources:\n        - name: cpu\n          weight: 3\n        - name: nvidia.com/gpu\n        requestedToCapacityRatio:\n          shape:\n          - {utilization: 0, score: 0}\n          - {utilization: 60, score: 10}\n          - {utilization: 100, score: 4}\n",
    );
    let fit = &args[0].node_resources_fit;
    assert_eq!(
        fit.strategy,
        Strategy::RequestedToCapacityRatio(vec![
            ShapePoint {
                utilization: 0,
                score: 0
            },
            ShapePoint {
                utilization: 60,
                score: 100
            },
            ShapePoint {
                utilization: 100,
                score: 40
            },
        ])
    );
    let weights: Vec<(&str, i64)> = fit
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.weight))
        .collect();
    assert_eq!(weights, [("cpu", 3), ("nvidia.com/gpu", 1)]);
    assert_eq!(fit.ignored_resource_groups, ["example.com"]);
}

#[test]
fn pod_topology_spread_and_inter_pod_affinity_arguments() {
    let args = plugin_args(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 10\n      ignorePreferredTermsOfExistingPods: true\n",
    );
    let pts = &args[0].pod_topology_spread;
    assert_eq!(pts.defaulting_type, DefaultingType::List);
    assert_eq!(pts.default_constraints.len(), 1);
    assert_eq!(pts.default_constraints[0].max_skew, 1);
    assert_eq!(
        pts.default_constraints[0].topology_key,
        "topology.kubernetes.io/zone"
    );
    assert_eq!(
        pts.default_constraints[0].when_unsatisfiable,
        "DoNotSchedule"
    );
    assert_eq!(args[0].inter_pod_affinity.hard_pod_affinity_weight, 10);
    assert!(
        args[0]
            .inter_pod_affinity
            .ignore_preferred_terms_of_existing_pods
    );

    let defaults = &plugin_args("")[0];
    assert_eq!(
        defaults.pod_topology_spread.defaulting_type,
        DefaultingType::System
    );
    assert_eq!(defaults.inter_pod_affinity.hard_pod_affinity_weight, 1);
}

#[test]
fn node_affinity_and_preemption_arguments() {
    let args = plugin_args(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - {key: zone, operator: In, values: [a]}\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n      minCandidateNodesAbsolute: 5\n",
    );
    assert!(args[0].node_affinity.added_required.is_some());
    assert!(args[0].node_affinity.added_preferred.is_none());
    assert_eq!(args[0].default_preemption.min_candidate_nodes_percentage, 0);
    assert_eq!(args[0].default_preemption.min_candidate_nodes_absolute, 5);
}

#[test]
fn extender_ignored_resources_replace_fit_ignored_resources() {
    let body = "extenders:\n- urlPrefix: http://x\n  filterVerb: filter\n  managedResources:\n  - name: example.com/foo\n    ignoredByScheduler: true\n";
    assert_eq!(frameworks(body)[0].extenders[0].url_prefix, "http://x");
    let err = rejected(&format!(
        "{body}profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: PrioritySort\n      - name: DefaultBinder\n"
    ));
    assert_eq!(
        err,
        "couldn't build extenders: can't find NodeResourcesFitArgs in plugin config"
    );
}

#[test]
fn decoding_errors() {
    assert_eq!(
        rejected(
            "foo: 1\nprofiles:\n- schedulerName: x\n  plugin: {}\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        typ: MostAllocated\n"
        ),
        "strict decoding error: unknown field \"foo\", unknown field \"profiles[0].plugin\", decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin NodeResourcesFit: strict decoding error: unknown field \"scoringStrategy.typ\""
    );
    assert_eq!(
        rejected("profiles:\n- percentageOfNodesToScore: 1.5\n"),
        "json: cannot unmarshal number 1.5 into Go struct field KubeSchedulerProfile.profiles.percentageOfNodesToScore of type int32"
    );
    assert_eq!(
        rejected("profiles:\n- percentageOfNodesToScore: ten\n"),
        "json: cannot unmarshal string into Go struct field KubeSchedulerProfile.profiles.percentageOfNodesToScore of type int32"
    );
    assert_eq!(
        rejected(
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: [1]\n"
        ),
        "decoding .profiles[0].pluginConfig[0]: decoding args for plugin InterPodAffinity: json: cannot unmarshal array into Go struct field InterPodAffinityArgs.hardPodAffinityWeight of type int32"
    );
    assert_eq!(
        from_text("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", Release::OLDEST.into()).err(),
        Some(Failure::Rejected(
            "no kind \"KubeSchedulerConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1beta3\" in scheme \"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme/scheme.go:29\"".into()
        ))
    );
    assert_eq!(
        from_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n",
            Release::OLDEST.into()
        )
        .err(),
        Some(Failure::Rejected(
            "Object 'Kind' is missing in 'apiVersion: kubescheduler.config.k8s.io/v1\n'".into()
        ))
    );
    assert_eq!(
        rejected("leaderElection:\n  leaseDuration: \"10\"\n"),
        "time: missing unit in duration \"10\""
    );
}

#[test]
fn validation_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "percentageOfNodesToScore: 101\n",
            "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        ),
        (
            "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: -1\n- schedulerName: a\n- {}\n",
            "[profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100], profiles[1].schedulerName: Duplicate value: {}, profiles[2].schedulerName: Required value]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 200\n",
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n      minCandidateNodesAbsolute: 0\n",
            "[profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute, profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - {name: cpu, weight: 2}\n      - {name: cpu}\n",
            "[profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1, profiles[0].pluginConfig[0].args.resources[1].name: Duplicate value: \"cpu\"]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
            "[profiles[0].pluginConfig[0].args.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty, profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf), profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod, profiles[0].pluginConfig[0].args.defaultConstraints[1]: Duplicate value: \"{zone, DoNotSchedule}\"]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n      bindTimeoutSeconds: -1\n      shape:\n      - {utilization: 0, score: 10}\n",
            "[profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value, profiles[0].pluginConfig[0].args.shape: Invalid value: [{\"Utilization\":0,\"Score\":10}]: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - {key: zone, operator: Near, values: [a]}\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: \"Near\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n",
            "profiles[0].pluginConfig[1]: Duplicate value: \"NodeAffinity\"",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: EBSLimits\n",
            "profiles[0].plugins.filter.enabled[0]: Invalid value: \"EBSLimits\": was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled:\n      - name: PrioritySort\n",
            "profiles[1].plugins.queueSort: Invalid value: {\"Enabled\":[{\"Name\":\"PrioritySort\",\"Weight\":0}],\"Disabled\":null}: must be the same for all profiles",
        ),
        (
            "leaderElection:\n  leaderElect: true\n  leaseDuration: 5s\n  resourceLock: endpoints\n",
            "[leaderElection.leaseDuration: Invalid value: \"10s\": must be greater than `RenewDeadline`, leaderElection.resourceLock: Invalid value: \"endpoints\": resourceLock value must be \"leases\"]",
        ),
        (
            "parallelism: 0\npodInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "[parallelism: Invalid value: 0: should be an integer value greater than zero, podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds]",
        ),
        (
            "extenders:\n- urlPrefix: http://a\n  prioritizeVerb: p\n  bindVerb: b\n- urlPrefix: http://b\n  weight: 1\n  bindVerb: b\n  managedResources:\n  - name: cpu\n",
            "[extenders[0].weight: Invalid value: 0: must have a positive weight applied to it, extenders[1].managedResources[0].name: Invalid value: \"cpu\": is an invalid extended resource name, extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender can implement bind]",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(rejected(body), *want, "{body}");
    }
}

#[test]
fn node_resources_fit_is_validated_by_its_factory() {
    let fit = |strategy: &str| {
        format!(
            "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n{strategy}"
        )
    };
    let prefix = "initializing profiles: creating profile for scheduler name s: initializing plugin \"NodeResourcesFit\": ";
    assert_eq!(
        rejected(&fit(
            "        type: LeastAllocated\n        resources:\n        - {name: cpu, weight: 101}\n"
        )),
        format!(
            "{prefix}scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
        )
    );
    assert_eq!(
        rejected(&fit(
            "        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape:\n          - {utilization: 50, score: 11}\n          - {utilization: 50, score: 1}\n"
        )),
        format!(
            "{prefix}[scoringStrategy.shape[1].utilization: Invalid value: 50: values must be sorted in increasing order, scoringStrategy.shape[0].score: Invalid value: 11: not in valid range [0, 10]]"
        )
    );
    assert_eq!(
        rejected(&fit("        resources:\n        - {name: cpu}\n")),
        format!(
            "{prefix}scoringStrategy.type: Unsupported value: \"\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
        )
    );
    // Not enabled anywhere: never built, never validated.
    assert!(
        load(&format!(
            "{}  plugins:\n    multiPoint:\n      disabled:\n      - name: NodeResourcesFit\n",
            fit("        type: Bogus\n")
        ))
        .is_ok()
    );
    assert!(matches!(
        load(&fit("        type: RequestedToCapacityRatio\n")),
        Err(Failure::Crash(_))
    ));
}

#[test]
fn framework_errors() {
    let profile = |plugins: &str| {
        rejected(&format!(
            "profiles:\n- schedulerName: p\n  plugins:\n{plugins}"
        ))
    };
    let prefix = "initializing profiles: creating profile for scheduler name p: ";
    assert_eq!(
        profile("    multiPoint:\n      enabled:\n      - name: Foo\n"),
        format!("{prefix}PreFilterPlugin \"Foo\" does not exist")
    );
    assert_eq!(
        profile("    score:\n      enabled:\n      - name: Foo\n"),
        format!("{prefix}ScorePlugin \"Foo\" does not exist")
    );
    assert_eq!(
        profile("    filter:\n      enabled:\n      - name: ImageLocality\n"),
        format!("{prefix}plugin \"ImageLocality\" does not extend FilterPlugin plugin")
    );
    assert_eq!(
        profile("    filter:\n      enabled:\n      - name: NodeName\n      - name: NodeName\n"),
        format!("{prefix}plugin \"NodeName\" already registered as \"FilterPlugin\"")
    );
    assert_eq!(
        profile(
            "    multiPoint:\n      enabled:\n      - name: NodeName\n      - name: NodeName\n"
        ),
        format!("{prefix}plugin \"NodeName\" already registered as \"FilterPlugin\"")
    );
    assert_eq!(
        profile(
            "    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: DefaultBinder\n"
        ),
        format!(
            "{prefix}only one queue sort plugin required for profile with scheduler name \"p\", but got 0"
        )
    );
    assert_eq!(
        profile("    bind:\n      disabled:\n      - name: '*'\n"),
        format!("{prefix}at least one bind plugin is needed for profile with scheduler name \"p\"")
    );
}

/// What changes with the release: plugins the registry has, plugin arguments' fields, their
/// defaults and validation.
#[test]
fn releases_differ() {
    let load_as = |release: &str, body: &str| {
        from_text(
            &format!("{HEADER}{body}"),
            Release::parse(release).unwrap().into(),
        )
    };
    let rejected_as = |release: &str, body: &str| match load_as(release, body) {
        Err(Failure::Rejected(m)) => m,
        Err(other) => panic!("{release}: not a rejection: {other:?}"),
        Ok(_) => panic!("{release}: accepted"),
    };

    // NodeDeclaredFeatures: unknown to 1.34, a no-op in 1.35, in the default profile from 1.36.
    let named = "profiles:\n- schedulerName: p\n  plugins:\n    filter:\n      enabled:\n      - name: NodeDeclaredFeatures\n";
    assert!(
        rejected_as("1.34", named)
            .ends_with("FilterPlugin \"NodeDeclaredFeatures\" does not exist")
    );
    assert!(load_as("1.35", named).is_ok());
    let filters = |release: &str| {
        let fw = &load_as(release, "").unwrap().frameworks[0];
        names(fw, &fw.filter)
    };
    assert!(!filters("1.35").contains(&"NodeDeclaredFeatures"));
    assert_eq!(filters("1.36").last(), Some(&"NodeDeclaredFeatures"));

    // DynamicResources is weighted 2 from 1.35.
    let weight = |release: &str| {
        let fw = &load_as(release, "").unwrap().frameworks[0];
        scores(fw)
            .into_iter()
            .find(|(n, _)| *n == "DynamicResources")
            .map(|(_, w)| w)
    };
    assert_eq!(weight("1.34"), None);
    assert_eq!(weight("1.35"), Some(2));

    // DynamicResourcesArgs.bindingTimeout: unknown in 1.34, forbidden with 1.35's gates.
    let binding = "profiles:\n- schedulerName: p\n  pluginConfig:\n  - name: DynamicResources\n    args:\n      bindingTimeout: 500ms\n";
    assert!(
        rejected_as("1.34", binding).contains("unknown field \"bindingTimeout\""),
        "{}",
        rejected_as("1.34", binding)
    );
    assert_eq!(
        rejected_as("1.35", binding),
        "profiles[0].pluginConfig[0].args.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled"
    );
    assert_eq!(
        rejected_as("1.36", binding),
        "profiles[0].pluginConfig[0].args.bindingTimeout: Invalid value: \"500ms\": must be at least 1 second"
    );

    // VolumeBindingArgs.shape: refused until StorageCapacityScoring is on (1.37), then checked.
    let shape = |points: &str| {
        format!(
            "profiles:\n- schedulerName: p\n  pluginConfig:\n  - name: VolumeBinding\n    args:\n      shape:\n{points}"
        )
    };
    let good = shape("      - {utilization: 0, score: 0}\n      - {utilization: 100, score: 10}\n");
    assert!(rejected_as("1.36", &good).contains("unexpected field `shape`"));
    assert!(load_as("1.37", &good).is_ok());
    assert_eq!(
        rejected_as("1.37", &shape("      - {utilization: 0, score: 11}\n")),
        "profiles[0].pluginConfig[0].args.shape[0].score: Invalid value: 11: not in valid range [0, 10]"
    );

    // NodeResourcesFitArgs: 1.36 ties requestedToCapacityRatio to its type.
    let fit = |strategy: &str| {
        format!(
            "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n{strategy}"
        )
    };
    let prefix = "initializing profiles: creating profile for scheduler name s: initializing plugin \"NodeResourcesFit\": ";
    let bare_ratio = fit("        type: RequestedToCapacityRatio\n");
    assert!(matches!(
        load_as("1.35", &bare_ratio),
        Err(Failure::Crash(_))
    ));
    assert_eq!(
        rejected_as("1.36", &bare_ratio),
        format!(
            "{prefix}scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
        )
    );
    let stray_ratio = fit(
        "        type: LeastAllocated\n        requestedToCapacityRatio:\n          shape:\n          - {utilization: 0, score: 1}\n",
    );
    assert!(load_as("1.35", &stray_ratio).is_ok());
    assert_eq!(
        rejected_as("1.36", &stray_ratio),
        format!(
            "{prefix}scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"
        )
    );
    let bad_shape = fit(
        "        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape:\n          - {utilization: 0, score: 11}\n",
    );
    assert!(rejected_as("1.35", &bad_shape).contains("scoringStrategy.shape[0].score"));
    assert!(
        rejected_as("1.36", &bad_shape)
            .contains("scoringStrategy.requestedToCapacityRatio.shape[0].score")
    );
}

#[test]
fn extenders_decode_every_field_and_run_ignorable_ones_last() {
    let fws = frameworks(
        "extenders:\n- urlPrefix: https://audit\n  filterVerb: check\n  ignorable: true\n- urlPrefix: https://quota/\n  filterVerb: filter\n  prioritizeVerb: score\n  preemptVerb: preempt\n  bindVerb: bind\n  weight: 3\n  enableHTTPS: true\n  httpTimeout: 1500ms\n  nodeCacheCapable: true\n  tlsConfig:\n    insecure: false\n    serverName: quota.example\n    caFile: /ca.pem\n    certData: aGVsbG8=\n  managedResources:\n  - name: example.com/gpu\n",
    );
    let names: Vec<&str> = fws[0].extenders.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["https://quota/", "https://audit"]);
    let quota = &fws[0].extenders[0];
    assert_eq!(
        (
            quota.filter_verb.as_str(),
            quota.prioritize_verb.as_str(),
            quota.preempt_verb.as_str(),
            quota.bind_verb.as_str(),
            quota.weight
        ),
        ("filter", "score", "preempt", "bind", 3)
    );
    assert!(quota.enable_https && quota.node_cache_capable && !quota.ignorable);
    assert_eq!(
        quota.timeout(),
        Some(std::time::Duration::from_millis(1500))
    );
    let tls = quota.tls_config.as_ref().unwrap();
    assert_eq!(tls.server_name, "quota.example");
    assert_eq!(tls.ca_file, "/ca.pem");
    assert_eq!(tls.cert_data, b"hello");
    assert_eq!(quota.managed_resources[0].name, "example.com/gpu");
    assert_eq!(
        fws[0].extenders[1].timeout(),
        Some(crate::config::extender::DEFAULT_HTTP_TIMEOUT)
    );
}

#[test]
fn extender_tls_data_is_base64() {
    assert_eq!(
        rejected("extenders:\n- urlPrefix: https://x\n  tlsConfig:\n    caData: not*base64\n"),
        "illegal base64 data at input byte 3"
    );
    assert_eq!(
        rejected("extenders:\n- urlPrefix: https://x\n  tlsConfig:\n    caData: 12\n"),
        "json: cannot unmarshal number into Go struct field ExtenderTLSConfig.extenders.tlsConfig.caData of type []uint8"
    );
}

#[test]
fn null_is_the_zero_value_as_go_decodes_it() {
    // kube-scheduler starts with a null profile: the zero profile, defaulted.
    let fws = frameworks("profiles: [null]\n");
    assert_eq!(fws.len(), 1);
    assert_eq!(fws[0].profile, "default-scheduler");
    let plain = frameworks("profiles: [{schedulerName: default-scheduler}]\n");
    assert_eq!(scores(&fws[0]), scores(&plain[0]));
    let fws = frameworks("profiles:\n- schedulerName: null\n  percentageOfNodesToScore: null\n");
    assert_eq!(fws[0].profile, "default-scheduler");
}
