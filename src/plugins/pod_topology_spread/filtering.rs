//! Filtering (`filtering.go`): PreFilter counts the pods each DoNotSchedule constraint matches
//! per domain; AddPod and RemovePod keep the counts of a copy current; Filter lets a node
//! through while its domain stays within the skew.

use super::*;

/// Matching pods per domain of one constraint: the counts PreFilter found, shared by every copy
/// of the state, plus what AddPod/RemovePod changed in this copy.
#[derive(Clone, Debug)]
pub(super) struct DomainCounts {
    pub(super) base: Arc<FxHashMap<Str, i64>>,
    pub(super) changed: Vec<(Str, i64)>,
}

impl DomainCounts {
    pub(super) fn get(&self, domain: Str) -> i64 {
        match self.changed.iter().find(|(d, _)| *d == domain) {
            Some(&(_, n)) => n,
            None => self.base.get(&domain).copied().unwrap_or(0),
        }
    }

    /// Adds `delta` to a domain, creating it as upstream's map does; returns the new count.
    pub(super) fn add(&mut self, domain: Str, delta: i64) -> i64 {
        if let Some((_, n)) = self.changed.iter_mut().find(|(d, _)| *d == domain) {
            *n += delta;
            return *n;
        }
        let n = self.base.get(&domain).copied().unwrap_or(0) + delta;
        self.changed.push((domain, n));
        n
    }

    /// How many domains there are.
    pub(super) fn len(&self) -> usize {
        self.base.len()
            + self
                .changed
                .iter()
                .filter(|(d, _)| !self.base.contains_key(d))
                .count()
    }
}

/// The two domains with the fewest matching pods (`criticalPaths`): `[0]` always holds the
/// minimum, `[1]` a count at least as large. Exact as long as only one domain changes, which is
/// all preemption and the nominated-pods pass do to one copy of the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CriticalPaths(pub(super) [(Str, i64); 2]);

impl CriticalPaths {
    pub(super) fn new() -> Self {
        CriticalPaths([(Str::empty(), NO_DOMAIN); 2])
    }

    pub(super) fn update(&mut self, domain: Str, num: i64) {
        let p = &mut self.0;
        let existing = if domain == p[0].0 {
            Some(0)
        } else if domain == p[1].0 {
            Some(1)
        } else {
            None
        };
        match existing {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None if num < p[0].1 => {
                p[1] = p[0];
                p[0] = (domain, num);
            }
            None if num < p[1].1 => p[1] = (domain, num),
            None => {}
        }
    }
}

/// What Filter reads: the DoNotSchedule constraints and their domain counts.
#[derive(Clone, Debug)]
pub struct PreFilterState {
    pub(super) constraints: Arc<[Constraint]>,
    /// Per constraint: the incoming pod matches its selector, so it adds itself to a domain.
    pub(super) self_match: Arc<[bool]>,
    pub(super) counts: Vec<DomainCounts>,
    pub(super) critical_paths: Vec<CriticalPaths>,
}

impl PreFilterState {
    /// `minMatchNum`: the global minimum, 0 while there are fewer domains than `minDomains`.
    pub(super) fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        if self.counts[i].len() < usize::try_from(min_domains).unwrap_or(0) {
            0
        } else {
            self.critical_paths[i].0[0].1
        }
    }

    /// `updateWithPod`: a pod of the incoming pod's namespace added to (+1) or removed from (-1)
    /// a node. Unlike PreFilter's count, a terminating pod and an empty selector still count.
    pub(super) fn update_with_pod(
        &mut self,
        updated: &Pod,
        incoming: &Pod,
        node: &Node,
        delta: i64,
    ) {
        if updated.namespace != incoming.namespace || !has_all_keys(&node.labels, &self.constraints)
        {
            return;
        }
        let mut inclusion = Inclusion::new(incoming, node);
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(&updated.labels) || !inclusion.includes(c) {
                continue;
            }
            let domain = node.labels.get(c.topology_key).unwrap_or_default();
            let n = self.counts[i].add(domain, delta);
            self.critical_paths[i].update(domain, n);
        }
    }
}

pub(super) fn pre_filter_state_missing() -> Status {
    Status::error(format!(
        "reading \"PreFilter{NAME}\" from cycleState: not found"
    ))
}

impl PodTopologySpread {
    pub(super) fn pre_filter_state(
        &self,
        cx: &Cx,
        state: &mut CycleState,
    ) -> (Status, PreFilterNodes) {
        let pod = cx.pod;
        let constraints = match self.constraints(pod, &cx.snapshot.cluster, Action::DoNotSchedule) {
            Ok(c) if c.is_empty() => return (Status::skip(), None),
            Ok(c) => c,
            Err(e) => {
                return (
                    Status::error(format!("get constraints from pod: {e}")),
                    None,
                );
            }
        };
        let nodes = &cx.snapshot.nodes;
        let per_node =
            count_matching_pods(cx.snapshot, &constraints, pod.namespace, |node, slots| {
                if !has_all_keys(&node.node.labels, &constraints) {
                    slots.fill(EXCLUDED);
                    return;
                }
                let mut inclusion = Inclusion::new(pod, &node.node);
                for (slot, c) in slots.iter_mut().zip(&constraints) {
                    if !inclusion.includes(c) {
                        *slot = EXCLUDED;
                    }
                }
            });
        // Summed in node order, remembering the order domains first appear in, so the critical
        // paths (which keep one of several tied domains) are the same on every run.
        let mut counts: Vec<FxHashMap<Str, i64>> = vec![FxHashMap::default(); constraints.len()];
        let mut domains: Vec<Vec<Str>> = vec![Vec::new(); constraints.len()];
        for (node, slots) in nodes.iter().zip(per_node.chunks(constraints.len())) {
            for (i, (&n, c)) in slots.iter().zip(constraints.iter()).enumerate() {
                if n == EXCLUDED {
                    continue;
                }
                let domain = node.node.labels.get(c.topology_key).unwrap_or_default();
                match counts[i].entry(domain) {
                    Entry::Occupied(mut e) => *e.get_mut() += n,
                    Entry::Vacant(e) => {
                        e.insert(n);
                        domains[i].push(domain);
                    }
                }
            }
        }
        let critical_paths = counts
            .iter()
            .zip(&domains)
            .map(|(counts, domains)| {
                let mut paths = CriticalPaths::new();
                for &d in domains {
                    paths.update(d, counts[&d]);
                }
                paths
            })
            .collect();
        let self_match = constraints
            .iter()
            .map(|c| c.selector.matches(&pod.labels))
            .collect();
        state.write(
            self.pre_filter,
            PreFilterState {
                constraints: constraints.into(),
                self_match,
                counts: counts
                    .into_iter()
                    .map(|base| DomainCounts {
                        base: Arc::new(base),
                        changed: Vec::new(),
                    })
                    .collect(),
                critical_paths,
            },
        );
        (Status::success(), None)
    }

    pub(super) fn add_pod_to_state(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_add: &Arc<Pod>,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_add, cx.pod, &node.node, 1);
        Status::success()
    }

    pub(super) fn remove_pod_from_state(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_remove: &Pod,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_remove, cx.pod, &node.node, -1);
        Status::success()
    }

    pub(super) fn filter_node(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        let labels = &node.node.labels;
        let Some(first) = s.misses(labels).next() else {
            return Status::success();
        };
        // Upstream stops at the first constraint the node breaks; the facts name every one
        // broken the same way.
        let missing = first.domain.is_none();
        let status = if missing {
            Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        } else {
            Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        };
        cx.with_facts(status, || {
            s.misses(labels)
                .filter(|m| m.domain.is_none() == missing)
                .map(|m| Fact::of(Detail::Spread(m)))
                .collect()
        })
    }
}

impl PreFilterState {
    /// The constraints a node with these labels breaks, in order: it lacks the topology key, or
    /// placing the pod in its domain would skew it past `maxSkew`.
    fn misses<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = SpreadMiss> + 'a {
        self.constraints
            .iter()
            .enumerate()
            .filter_map(move |(i, c)| {
                let miss = |domain, matching, minimum, skew| SpreadMiss {
                    constraint: u16::try_from(i).unwrap_or(u16::MAX),
                    topology_key: c.topology_key,
                    domain,
                    matching,
                    minimum,
                    max_skew: c.max_skew,
                    skew,
                };
                let Some(domain) = labels.get(c.topology_key) else {
                    return Some(miss(None, 0, 0, 0));
                };
                let matching = self.counts[i].get(domain);
                let minimum = self.min_match_num(i, c.min_domains);
                let skew = matching + i64::from(self.self_match[i]) - minimum;
                (skew > i64::from(c.max_skew)).then(|| miss(Some(domain), matching, minimum, skew))
            })
    }
}
